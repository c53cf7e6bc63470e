"""A small, safe evaluator of the CEL that DeviceClass selectors use in practice, and nothing more.

Understood (Kubernetes' DRA CEL environment, `device` being one published device):

    device.driver == "gpu.nvidia.com"                       strings, either quote, either operand order
    device.attributes["gpu.nvidia.com"].model == "h100"     also ["model"]; int, bool and string attributes
    device.attributes["d"].count >= 2                       ==, !=, <, <=, >, >= on ints and strings
    device.capacity["d"].memory.compareTo(quantity("40Gi")) >= 0   also isGreaterThan(...), isLessThan(...)
    device.capacity["d"].memory == quantity("80Gi")
    "model" in device.attributes["d"]                       the usual guards
    has(device.attributes["d"].model)
    &&, ||, !, parentheses, string/int/bool literals

Anything else (other functions and macros, arithmetic, version comparisons, ternaries) raises
`NotUnderstood` when the expression is compiled: such a class is reported as not understood, never
guessed. At evaluation, what CEL makes a runtime error (a missing attribute, an ordering between
different types) makes the selector false for that device, and `&&`/`||` absorb an error the way CEL
does (`false && error` is false, `true || error` is true). Equality between different types is false
(CEL's heterogeneous equality).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from exporter.kube.requests import parse_quantity


class NotUnderstood(ValueError):
    """The expression uses CEL outside the subset this module evaluates."""


class _EvalError(Exception):
    """A CEL runtime error: the selector does not select the device."""


class _Missing(_EvalError):
    """No such key: an attribute or capacity the device does not publish."""


@dataclass(frozen=True, slots=True)
class Version:
    """A `version` attribute (semver): CEL compares it only with semver functions, which are not understood."""

    text: str


@dataclass(frozen=True, slots=True)
class Device:
    """One device as CEL sees it: attributes and capacity per domain (unqualified names: the driver's)."""

    driver: str
    attributes: Mapping[str, Mapping[str, Any]]  # domain → name → str | int | bool | Version
    capacity: Mapping[str, Mapping[str, Decimal]]  # domain → name → quantity


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    | (?P<int>[0-9]+)(?![0-9.eEuxX])
    | (?P<op>==|!=|<=|>=|&&|\|\||[<>!()\[\].,])
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t"}
_RELATIONS = ("==", "!=", "<", "<=", ">", ">=")

Node = Callable[[Device], Any]


def _tokens(expression: str) -> list[tuple[str, str]]:
    out, position = [], 0
    text = expression.rstrip()
    while position < len(text):
        found = _TOKEN.match(text, position)
        if not found or found.end() == position:
            raise NotUnderstood(f"unexpected text at {position}: {text[position : position + 20]!r}")
        kind = found.lastgroup or ""
        value = found.group(kind)
        if kind == "string" and text[found.start(kind) - 1 : found.start(kind)] in ("r", "R", "b", "B"):
            raise NotUnderstood("raw or byte strings")
        out.append((kind, value))
        position = found.end()
    return out


def _unquote(literal: str) -> str:
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        if body[i] == "\\":
            escaped = _ESCAPES.get(body[i + 1])
            if escaped is None:
                raise NotUnderstood(f"escape \\{body[i + 1]}")
            out.append(escaped)
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


class _Parser:
    def __init__(self, expression: str) -> None:
        self.tokens = _tokens(expression)
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token[0] == "end" or (value is not None and token[1] != value):
            raise NotUnderstood(f"expected {value or 'more'}, found {token[1] or 'the end'}")
        self.i += 1
        return token

    def parse(self) -> Node:
        node = self.or_expr()
        if self.peek()[0] != "end":
            raise NotUnderstood(f"unexpected {self.peek()[1]!r}")
        return node

    def or_expr(self) -> Node:
        node = self.and_expr()
        while self.peek()[1] == "||":
            self.take()
            node = _logical(node, self.and_expr(), stop=True)
        return node

    def and_expr(self) -> Node:
        node = self.relation()
        while self.peek()[1] == "&&":
            self.take()
            node = _logical(node, self.relation(), stop=False)
        return node

    def relation(self) -> Node:
        left = self.unary()
        token = self.peek()
        if token[1] in _RELATIONS:
            self.take()
            return _compare(token[1], left, self.unary())
        if token == ("ident", "in"):
            self.take()
            return _contains(left, self.unary())
        return left

    def unary(self) -> Node:
        if self.peek()[1] == "!":
            self.take()
            inner = self.unary()
            return lambda d: not _boolean(inner(d))
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while True:
            token = self.peek()[1]
            if token == ".":
                self.take()
                name = self.take()
                if name[0] != "ident":
                    raise NotUnderstood(f"field {name[1]!r}")
                node = self.method(node, name[1]) if self.peek()[1] == "(" else _field(node, name[1])
            elif token == "[":
                self.take()
                key = self.or_expr()
                self.take("]")
                node = _index(node, key)
            else:
                return node

    def method(self, target: Node, name: str) -> Node:
        self.take("(")
        argument = self.or_expr()
        self.take(")")
        if name not in ("compareTo", "isGreaterThan", "isLessThan"):
            raise NotUnderstood(f"function {name}()")

        def call(d: Device) -> Any:
            a, b = target(d), argument(d)
            if not isinstance(a, Decimal) or not isinstance(b, Decimal):
                raise _EvalError(f"{name} on non-quantities")
            order = (a > b) - (a < b)
            return order if name == "compareTo" else (order > 0 if name == "isGreaterThan" else order < 0)

        return call

    def primary(self) -> Node:
        kind, value = self.take()
        if kind == "string":
            text = _unquote(value)
            return lambda _: text
        if kind == "int":
            number = int(value)
            return lambda _: number
        if value == "(":
            node = self.or_expr()
            self.take(")")
            return node
        if kind == "ident" and value in ("true", "false"):
            flag = value == "true"
            return lambda _: flag
        if kind == "ident" and value == "device":
            return lambda d: d
        if kind == "ident" and value == "has" and self.peek()[1] == "(":
            self.take("(")
            tested = self.member()
            self.take(")")
            return _has(tested)
        if kind == "ident" and value == "quantity" and self.peek()[1] == "(":
            self.take("(")
            literal = self.take()
            self.take(")")
            if literal[0] != "string":
                raise NotUnderstood("quantity() of a non-literal")
            try:
                amount = parse_quantity(_unquote(literal[1]))
            except ValueError as exc:
                raise NotUnderstood(str(exc)) from exc
            return lambda _: amount
        raise NotUnderstood(f"{value!r}")


def _field(target: Node, name: str) -> Node:
    def get(d: Device) -> Any:
        value = target(d)
        if isinstance(value, Device):
            if name == "driver":
                return value.driver
            if name == "attributes":
                return _Domains(value.attributes)
            if name == "capacity":
                return _Domains(value.capacity)
            raise _EvalError(f"device has no field {name}")
        if isinstance(value, Mapping):
            if name not in value:
                raise _Missing(f"no such key: {name}")
            return value[name]
        raise _EvalError(f"no field {name}")

    if name not in ("driver", "attributes", "capacity") and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise NotUnderstood(name)
    return get


class _Domains:
    """device.attributes / device.capacity: a domain not published is an empty map, as in Kubernetes."""

    def __init__(self, by_domain: Mapping[str, Mapping[str, Any]]) -> None:
        self.by_domain = by_domain

    def domain(self, name: str) -> Mapping[str, Any]:
        return self.by_domain.get(name, {})


def _index(target: Node, key: Node) -> Node:
    def get(d: Device) -> Any:
        value, k = target(d), key(d)
        if not isinstance(k, str):
            raise _EvalError("a non-string key")
        if isinstance(value, _Domains):
            return value.domain(k)
        if isinstance(value, Mapping):
            if k not in value:
                raise _Missing(f"no such key: {k}")
            return value[k]
        raise _EvalError("indexing a non-map")

    return get


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _EvalError("not a bool")
    return value


def _logical(left: Node, right: Node, *, stop: bool) -> Node:
    """`&&` (stop=False) and `||` (stop=True), commutative about errors as in CEL."""

    def run(d: Device) -> bool:
        error: _EvalError | None = None
        for side in (left, right):
            try:
                if _boolean(side(d)) == stop:
                    return stop
            except _EvalError as exc:
                error = exc
        if error is not None:
            raise error
        return not stop

    return run


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Decimal):
        return "quantity"
    return "other"


def _compare(op: str, left: Node, right: Node) -> Node:
    def run(d: Device) -> bool:
        a, b = left(d), right(d)
        kind_a, kind_b = _kind(a), _kind(b)
        if kind_a == "other" or kind_b == "other":
            raise _EvalError("no comparison for this type")
        if op in ("==", "!="):
            equal = kind_a == kind_b and a == b
            return equal if op == "==" else not equal
        if kind_a != kind_b or kind_a in ("bool", "quantity"):
            raise _EvalError(f"no overload for {op}")  # quantities order only through compareTo()
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]  # type: ignore[no-any-return]

    return run


def _has(tested: Node) -> Node:
    """has(x.f): whether the field is there. Only a missing key counts as absent; other errors stay errors."""

    def run(d: Device) -> bool:
        try:
            tested(d)
        except _Missing:
            return False
        return True

    return run


def _contains(element: Node, container: Node) -> Node:
    def run(d: Device) -> bool:
        key, where = element(d), container(d)
        if not isinstance(key, str) or not isinstance(where, Mapping):
            raise _EvalError("`in` needs a string and a map")
        return key in where

    return run


@dataclass(frozen=True)
class Selector:
    """A compiled selector expression."""

    expression: str
    _run: Node

    def selects(self, device: Device) -> bool:
        try:
            return _boolean(self._run(device))
        except _EvalError:
            return False


def compile_selector(expression: str) -> Selector:
    """The expression compiled, or NotUnderstood naming what is outside the subset."""
    return Selector(expression, _Parser(expression).parse())


_DRIVER_ONLY = re.compile(
    r"""^\(*\s*(?:device\.driver\s*==\s*(['"])([^'"\\]+)\1|(['"])([^'"\\]+)\3\s*==\s*device\.driver)\s*\)*$"""
)


def driver_only(expression: str) -> str | None:
    """The driver, when the expression is nothing but `device.driver == "name"` (parenthesised or not)."""
    found = _DRIVER_ONLY.match(expression.strip())
    return (found.group(2) or found.group(4)) if found else None
