"""Just enough PromQL: the vector selectors of an expression, renames, and the simplest variable substitution.

Not a parser (promtool checks validity): a tokenizer that knows which identifiers are functions,
operators and grouping labels, so that what remains are metric names with their matchers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
        return f'{self.label}{self.op}"{self.value}"'


@dataclass(frozen=True)
class Selector:
    name: str  # "" when only matchers select (rare: {job="x"})
    matchers: tuple[Matcher, ...]

    def __str__(self) -> str:
        inner = ", ".join(map(str, self.matchers))
        return f"{self.name}{{{inner}}}" if inner else self.name


def _tokens(expr: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            raise PromQLSyntaxError(f"unexpected {expr[pos]!r} at offset {pos}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind not in ("space", "comment"):
            out.append((kind, m.group()))
    return out


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
