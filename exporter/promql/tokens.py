"""PromQL's tokens: the lexer every reading of an expression starts from, and the words it must know.

The identifiers that are functions, aggregations, keywords and grouping labels are what tell a metric name
from the rest; promtool remains the judge of full validity.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

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
