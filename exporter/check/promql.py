"""Just enough PromQL: the vector selectors of an expression, its structure, renames, and the simplest variable
substitution.

`selectors` is a tokenizer that knows which identifiers are functions, operators and grouping labels, so that
what remains are metric names with their matchers. `parse` gives the expression's structure (binary operators
with PromQL's precedence, aggregations, calls, each node with its span in the text) for judging emptiness as
PromQL evaluates it; promtool remains the judge of full validity.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

AGGREGATIONS = frozenset(
    [
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    ]
)
KEYWORDS = frozenset(
    [
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "atan2",
        "start",
        "end",
    ]
)
GROUPING = frozenset(["by", "without", "on", "ignoring", "group_left", "group_right"])

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<number>0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?[a-zA-Z0-9]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=,(){}\[\]@:])
    """,
    re.VERBOSE,
)


class PromQLSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str  # =, !=, =~, !~
    value: str

    def __str__(self) -> str:
        return f'{self.label}{self.op}"{quote(self.value)}"'


def quote(value: str) -> str:
    """`value` as the body of a PromQL double-quoted string (a regex keeps its escaping: `\\.` stays `\\.`)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass(frozen=True)
class Selector:
    name: str  # "" when only matchers select (rare: {job="x"})
    matchers: tuple[Matcher, ...]

    def __str__(self) -> str:
        inner = ", ".join(map(str, self.matchers))
        return f"{self.name}{{{inner}}}" if inner else self.name


def lex(expr: str, pattern: re.Pattern[str] = _TOKEN) -> Iterator[re.Match[str]]:
    """The tokens of `expr` (each match's `lastgroup` is its kind), without spaces and comments; `pattern` is
    PromQL's tokens or a superset of them (a dashboard's, with Grafana variables)."""
    pos = 0
    while pos < len(expr):
        m = pattern.match(expr, pos)
        if m is None:
            raise PromQLSyntaxError(f"unexpected {expr[pos]!r} at offset {pos}")
        pos = m.end()
        if m.lastgroup not in ("space", "comment"):
            yield m


def _tokens(expr: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "", m.group()) for m in lex(expr)]


def _unquote(token: str) -> str:
    body = token[1:-1]
    if token[0] == "`":
        return body
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _matchers(tokens: list[tuple[str, str]], i: int) -> tuple[tuple[Matcher, ...], int]:
    """Matchers from the token after `{` up to and including `}`; returns them and the next index."""
    found = []
    while tokens[i][1] != "}":
        if tokens[i][1] == ",":
            i += 1
            continue
        try:
            (k1, label), (_, op), (k3, value) = tokens[i : i + 3]
        except ValueError:
            raise PromQLSyntaxError("unterminated label matchers") from None
        if k1 != "ident" or op not in ("=", "!=", "=~", "!~") or k3 != "string":
            raise PromQLSyntaxError(f"bad label matcher near {label!r}")
        found.append(Matcher(label, op, _unquote(value)))
        i += 3
    return tuple(found), i + 1


def selectors(expr: str) -> list[Selector]:
    """Every vector selector of `expr`, in order (duplicates kept)."""
    tokens = [*_tokens(expr), ("end", "")]
    out: list[Selector] = []
    i = 0
    while i < len(tokens) - 1:
        kind, text = tokens[i]
        nxt = tokens[i + 1][1]
        if text == "[":  # range or subquery: durations and steps, no selectors
            while tokens[i][1] not in ("]", ""):
                i += 1
        elif kind == "ident" and text in GROUPING:
            if nxt == "(":
                while tokens[i][1] not in (")", ""):
                    i += 1
        elif kind == "ident" and (nxt == "(" or text in AGGREGATIONS or text in KEYWORDS):
            pass  # a function call, an aggregation or a keyword
        elif kind == "ident":
            matchers: tuple[Matcher, ...] = ()
            if nxt == "{":
                matchers, i = _matchers(tokens, i + 2)
                i -= 1
            out.append(Selector(text, matchers))
        elif text == "{":
            matchers, i = _matchers(tokens, i + 1)
            i -= 1
            names = [m.value for m in matchers if m.label == "__name__" and m.op == "="]
            rest = tuple(m for m in matchers if not (m.label == "__name__" and m.op == "="))
            out.append(Selector(names[0] if names else "", rest if names else matchers))
        i += 1
    return out


def metric_names(expr: str) -> set[str]:
    return {s.name for s in selectors(expr) if s.name}


DURATIONS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "__range_s": "3600", "__range_ms": "3600000"}
_VARIABLE = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)")


def substitute(expr: str, variables: Mapping[str, str] | None = None) -> str:
    """`expr` with Grafana's built-in intervals replaced by durations and `variables` by their values.

    Anything else that looks like a variable (`$1` in `label_replace`) is left alone, as Grafana does.
    """
    known = {**DURATIONS, **(variables or {})}

    def replace(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        return known.get(name, m.group(0))

    return _VARIABLE.sub(replace, expr)


def rename(expr: str, old: str, new: str) -> str:
    """`expr` with the metric name `old` replaced by `new` wherever it stands as a whole name.

    Histogram and counter sample names follow: `old_bucket` becomes `new_bucket`.
    """
    pattern = re.compile(rf"(?<![A-Za-z0-9_:]){re.escape(old)}(?P<suffix>_bucket|_sum|_count|_total)?(?![A-Za-z0-9_:])")
    return pattern.sub(lambda m: new + (m.group("suffix") or ""), expr)


# --- The expression's structure: a recursive-descent parser of PromQL, enough to judge emptiness ------------
# Each node keeps its span in the text, so a part of a query (the side of an `or`) can be run on its own.


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
    return [*((m.lastgroup or "", m.group(), m.start(), m.end()) for m in lex(expr)), ("end", "", len(expr), len(expr))]


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
            return StringLiteral(start, end, _unquote(text))
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
        matchers, nxt = _matchers(plain, self.i)
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
    from dataclasses import replace

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
