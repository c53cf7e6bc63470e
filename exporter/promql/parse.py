"""The expression's structure: a recursive-descent parser of PromQL, enough to judge emptiness.

Binary operators with PromQL's precedence, aggregations and calls; each node keeps its span in the text, so a
part of a query (the side of an `or`) can be run on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from exporter.promql.selectors import Selector, read_matchers, unquote
from exporter.promql.tokens import AGGREGATIONS, GROUPING, KEYWORDS, PromQLSyntaxError, lex


@dataclass(frozen=True)
class Node:
    start: int
    end: int


@dataclass(frozen=True)
class NumberLiteral(Node):
    text: str


@dataclass(frozen=True)
class StringLiteral(Node):
    value: str


@dataclass(frozen=True)
class VectorSelector(Node):
    selector: Selector


@dataclass(frozen=True)
class Call(Node):
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Aggregate(Node):
    op: str
    args: tuple[Node, ...]  # the parameter (topk's k, count_values' label) first, the vector last


@dataclass(frozen=True)
class Binary(Node):
    op: str
    lhs: Node
    rhs: Node


@dataclass(frozen=True)
class Unary(Node):
    op: str
    expr: Node


@dataclass(frozen=True)
class Paren(Node):
    expr: Node


# lowest precedence first; `^` is right-associative
_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"or"}),
    frozenset({"and", "unless"}),
    frozenset({"==", "!=", "<=", "<", ">=", ">"}),
    frozenset({"+", "-"}),
    frozenset({"*", "/", "%", "atan2"}),
    frozenset({"^"}),
)
_CONSTANTS = frozenset({"inf", "nan"})


def _spanned_tokens(expr: str) -> list[tuple[str, str, int, int]]:
    """The tokens, keywords and aggregations in lower case: Prometheus' lexer reads them case-insensitively
    (`OR vector(0)`, `SUM BY (pod)`), functions and names as written."""
    tokens = [(m.lastgroup or "", _word(m.lastgroup, m.group()), m.start(), m.end()) for m in lex(expr)]
    return [*tokens, ("end", "", len(expr), len(expr))]


def _word(kind: str | None, text: str) -> str:
    lower = text.lower()
    return lower if kind == "ident" and (lower in KEYWORDS or lower in AGGREGATIONS or lower in GROUPING) else text


class _Parser:
    def __init__(self, expr: str) -> None:
        self.tokens = _spanned_tokens(expr)
        self.i = 0

    @property
    def text(self) -> str:
        return self.tokens[self.i][1]

    @property
    def kind(self) -> str:
        return self.tokens[self.i][0]

    def take(self, expected: str | None = None) -> tuple[str, str, int, int]:
        token = self.tokens[self.i]
        if expected is not None and token[1] != expected:
            found = repr(token[1]) if token[0] != "end" else "the end"
            raise PromQLSyntaxError(f"expected {expected!r} at offset {token[2]}, found {found}")
        self.i += 1
        return token

    def parse(self) -> Node:
        node = self.binary(0)
        if self.kind != "end":
            raise PromQLSyntaxError(f"unexpected {self.text!r} at offset {self.tokens[self.i][2]}")
        return node

    def binary(self, level: int) -> Node:
        if level == len(_LEVELS):
            return self.unary()
        lhs = self.binary(level + 1)
        while self.text in _LEVELS[level] and self.kind in ("op", "ident"):
            op = self.take()[1]
            self.modifiers()
            rhs = self.binary(level if op == "^" else level + 1)
            lhs = Binary(lhs.start, rhs.end, op, lhs, rhs)
            if op == "^":
                break
        return lhs

    def modifiers(self) -> None:
        """`bool`, `on(…)`/`ignoring(…)` and `group_left(…)`/`group_right(…)` after a binary operator."""
        if self.text == "bool":
            self.take()
        for words in (("on", "ignoring"), ("group_left", "group_right")):
            if self.text in words:
                self.take()
                if self.text == "(":
                    self.labels()

    def labels(self) -> list[str]:
        self.take("(")
        found = []
        while self.text != ")":
            if self.text == ",":
                self.take()
                continue
            kind, text, *_ = self.take()
            if kind not in ("ident", "string"):
                raise PromQLSyntaxError(f"bad label {text!r} in a grouping")
            found.append(text)
        self.take(")")
        return found

    def unary(self) -> Node:
        if self.text in ("-", "+") and self.kind == "op":
            start = self.take()[2]
            inner = self.binary(len(_LEVELS) - 1)  # `-a^b` is `-(a^b)`
            return Unary(start, inner.end, "-", inner)
        return self.postfix(self.primary())

    def postfix(self, node: Node) -> Node:
        while True:
            if self.text == "[":  # a range or a subquery: the durations say nothing about emptiness
                while self.text not in ("]", ""):
                    self.take()
                node = _extend(node, self, self.take("]")[3])
            elif self.text == "offset":
                self.take()
                if self.text == "-":
                    self.take()
                node = _extend(node, self, self.take()[3])
            elif self.text == "@":
                self.take()
                if self.text in ("start", "end"):
                    self.take()
                    self.take("(")
                    end = self.take(")")[3]
                else:
                    if self.text in ("-", "+"):
                        self.take()
                    end = self.take()[3]
                node = _extend(node, self, end)
            else:
                return node

    def primary(self) -> Node:
        kind, text, start, end = self.tokens[self.i]
        if kind == "number" or (kind == "ident" and text.lower() in _CONSTANTS and self.tokens[self.i + 1][1] != "("):
            self.take()
            return NumberLiteral(start, end, text)
        if kind == "string":
            self.take()
            return StringLiteral(start, end, unquote(text))
        if text == "(":
            self.take()
            inner = self.binary(0)
            return Paren(start, self.take(")")[3], inner)
        if text == "{":
            return self.selector("", start)
        if kind == "ident" and text in AGGREGATIONS and self.tokens[self.i + 1][1] in ("(", "by", "without"):
            return self.aggregate()
        if kind == "ident" and self.tokens[self.i + 1][1] == "(":
            self.take()
            args, close = self.args()
            return Call(start, close, text, args)
        if kind == "ident" and text not in KEYWORDS:
            self.take()
            return self.selector(text, start)
        found = repr(text) if kind != "end" else "the end"
        raise PromQLSyntaxError(f"unexpected {found} at offset {start}")

    def selector(self, name: str, start: int) -> Node:
        if self.text != "{":
            return VectorSelector(start, self.tokens[self.i - 1][3], Selector(name, ()))
        self.take("{")
        plain = [(k, t) for k, t, *_ in self.tokens]
        matchers, nxt = read_matchers(plain, self.i)
        self.i = nxt
        end = self.tokens[self.i - 1][3]
        if not name:
            names = [m.value for m in matchers if m.label == "__name__" and m.op == "="]
            if names:
                rest = tuple(m for m in matchers if not (m.label == "__name__" and m.op == "="))
                return VectorSelector(start, end, Selector(names[0], rest))
        return VectorSelector(start, end, Selector(name, matchers))

    def aggregate(self) -> Node:
        op, start = self.take()[1], self.tokens[self.i - 1][2]
        if self.text in ("by", "without"):
            self.take()
            self.labels()
        args, close = self.args()
        if self.text in ("by", "without"):
            self.take()
            self.labels()
            close = self.tokens[self.i - 1][3]
        return Aggregate(start, close, op, args)

    def args(self) -> tuple[tuple[Node, ...], int]:
        self.take("(")
        found = []
        while self.text != ")":
            found.append(self.binary(0))
            if self.text == ",":
                self.take()
            elif self.text != ")":
                raise PromQLSyntaxError(f"expected ',' or ')' at offset {self.tokens[self.i][2]}")
        return tuple(found), self.take(")")[3]


def _extend(node: Node, parser: _Parser, end: int | None = None) -> Node:
    return replace(node, end=parser.tokens[parser.i - 1][3] if end is None else end)


def parse(expr: str) -> Node:
    """The structure of `expr`; raises PromQLSyntaxError where PromQL would not parse it."""
    return _Parser(expr).parse()


def walk(node: Node) -> list[Node]:
    """`node` and every node under it, parents first."""
    out = [node]
    for child in children(node):
        out.extend(walk(child))
    return out


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, (Call, Aggregate)):
        return node.args
    if isinstance(node, Binary):
        return (node.lhs, node.rhs)
    if isinstance(node, (Unary, Paren)):
        return (node.expr,)
    return ()
