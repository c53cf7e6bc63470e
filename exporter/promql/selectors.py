"""The vector selectors of an expression, renames, the simplest variable substitution, and the job scope.

`selectors` walks the tokens: what is not a function, an operator or a grouping label is a metric name with
its matchers. `scoped` adds a selector (the bundle's `job="llm-exporter"`) to every llm_* selector: the one
rewrite the alert rules, the recording rules and `diagnose`'s verdicts share.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from exporter.promql.tokens import AGGREGATIONS, GROUPING, KEYWORDS, PromQLSyntaxError, lex


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


def token_pairs(expr: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "", m.group()) for m in lex(expr)]


def unquote(token: str) -> str:
    body = token[1:-1]
    if token[0] == "`":
        return body
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def read_matchers(tokens: list[tuple[str, str]], i: int) -> tuple[tuple[Matcher, ...], int]:
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
        found.append(Matcher(label, op, unquote(value)))
        i += 3
    return tuple(found), i + 1


def selectors(expr: str) -> list[Selector]:
    """Every vector selector of `expr`, in order (duplicates kept)."""
    tokens = [*token_pairs(expr), ("end", "")]
    out: list[Selector] = []
    i = 0
    while i < len(tokens) - 1:
        kind, text = tokens[i]
        nxt = tokens[i + 1][1]
        if text == "[":  # range or subquery: durations and steps, no selectors
            while tokens[i][1] not in ("]", ""):
                i += 1
        elif kind == "ident" and text.lower() in GROUPING:  # keywords are case-insensitive in PromQL
            if nxt == "(":
                while tokens[i][1] not in (")", ""):
                    i += 1
        elif kind == "ident" and (nxt == "(" or text.lower() in AGGREGATIONS or text.lower() in KEYWORDS):
            pass  # a function call, an aggregation or a keyword
        elif kind == "ident":
            matchers: tuple[Matcher, ...] = ()
            if nxt == "{":
                matchers, i = read_matchers(tokens, i + 2)
                i -= 1
            out.append(Selector(text, matchers))
        elif text == "{":
            matchers, i = read_matchers(tokens, i + 1)
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


# a metric name that starts with llm_, and its braces if it has them
_LLM_SELECTOR = re.compile(r"\b(llm_[a-z0-9_]+)(?:\{([^}]*)\})?")


def scoped(expr: str, selector: str) -> str:
    """`expr` with `selector` (e.g. `job="llm-exporter"`) added to every llm_* metric selector in it, so that
    another job exposing the same names is not read."""
    if not selector:
        return expr

    def add(m: re.Match[str]) -> str:
        inner = f"{selector}, {m[2]}" if m[2] and m[2].strip() else selector
        return f"{m[1]}{{{inner}}}"

    return _LLM_SELECTOR.sub(add, expr)
