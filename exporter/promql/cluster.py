"""Expressions over many clusters: every query rewritten to keep a cluster label apart.

One Prometheus-compatible store (Thanos Query, Mimir, VictoriaMetrics) holds the series of many clusters,
each with an external label (`cluster` by default, as in kubernetes-mixin). Queries written for one cluster
would then sum queues and free GPUs of different clusters, and join a pod of one cluster to the GPU of
another. `clustered(expr, label)` rewrites an expression so that

- every aggregation keeps the label: `by (...)` gains it; an aggregation without a clause gains
  `by (label)`; `without (...)` keeps it already (it may not name it);
- every vector match keeps it: `on (...)` gains it; `ignoring (...)` may not name it; a match on all labels
  includes it already.

`filtered(expr, label, variable)` adds `label=~"$variable"` to every vector selector as well: the dashboards'
filter on the cluster variable; `only(expr, label, value)` adds `label="value"`: a query of one cluster's
own Prometheus (a KEDA trigger, a verdict) run on the store of many. The bundle applies these to its rendered
files (exporter/bundle/cluster.py); `check`, `diagnose` and the watchdog to the queries they run.

`absent(...)` and `vector(...)` make series without the label: `absent(up{...})` is true only when no
cluster has the series, and a match against `vector(...)` (none in the bundle today) would need the label
added with `label_replace` by hand.

A tokenizer, not a parser: it knows which identifiers are functions, aggregations, keywords and grouping
labels, which is all a rewrite of the grouping clauses and selectors needs (promtool checks the result).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from exporter.promql.tokens import AGGREGATIONS, KEYWORDS, PromQLSyntaxError, lex

DEFAULT_LABEL = "cluster"  # kubernetes-mixin's name, and the kustomize example's
VARIABLE = "cluster"  # the dashboard variable, whatever the label is called
LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# exporter/promql/tokens.py's tokens, plus Grafana variables (`$__rate_interval`), which dashboards hold
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<variable>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<number>0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?[a-zA-Z0-9]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=,(){}\[\]@:])
    """,
    re.VERBOSE,
)
_LIST_CLAUSES = frozenset(["by", "without", "on", "ignoring", "group_left", "group_right"])
_LABEL_VALUES = re.compile(r"label_values\((?P<selector>.*),\s*(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*\)", re.DOTALL)


class ClusterLabelError(ValueError):
    """An expression that cannot keep the cluster label apart (it drops or ignores it explicitly)."""


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    start: int
    end: int


def _tokens(expr: str) -> list[_Token]:
    try:
        return [_Token(m.lastgroup or "", m.group(), m.start(), m.end()) for m in lex(expr, _TOKEN)]
    except PromQLSyntaxError as e:
        raise ClusterLabelError(f"{e} in {expr!r}") from None


def label_name(value: str) -> str:
    """argparse type of --cluster-label: a Prometheus label name that is not reserved (`__`)."""
    if not LABEL_NAME.fullmatch(value) or value.startswith("__"):
        raise ValueError(f"{value!r} is not a label name (letters, digits and _, not starting with a digit or __)")
    return value


def _closing(tokens: list[_Token], i: int) -> int:
    """Index of the token closing the bracket at `i`."""
    opening = tokens[i].text
    closing = {"(": ")", "{": "}", "[": "]"}[opening]
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].text == opening:
            depth += 1
        elif tokens[j].text == closing:
            depth -= 1
            if depth == 0:
                return j
    raise ClusterLabelError(f"unbalanced {opening!r}")


def _labels(tokens: list[_Token], i: int, j: int) -> list[str]:
    """The label names of the list tokens[i] == '(' .. tokens[j] == ')'."""
    return [t.text for t in tokens[i + 1 : j] if t.kind in ("ident", "string")]


def _rewrite(expr: str, label: str, matcher: str | None) -> str:
    tokens = _tokens(expr)
    # (position, text) insertions, applied back to front
    edits: list[tuple[int, str]] = []
    skip: set[int] = set()  # token indices inside grouping lists and matcher braces: labels, not metrics

    def ensure(clause: int) -> None:
        """tokens[clause] is by/on: its list gains the label."""
        open_ = clause + 1
        if open_ >= len(tokens) or tokens[open_].text != "(":
            raise ClusterLabelError(f"{tokens[clause].text} without a label list in {expr!r}")
        close = _closing(tokens, open_)
        skip.update(range(open_, close + 1))
        names = _labels(tokens, open_, close)
        if label in names:
            return
        edits.append((tokens[close].start, f", {label}" if names else label))

    def refuse(clause: int) -> None:
        """tokens[clause] is without/ignoring: the label is kept unless the list names it."""
        open_ = clause + 1
        close = _closing(tokens, open_)
        skip.update(range(open_, close + 1))
        if label in _labels(tokens, open_, close):
            raise ClusterLabelError(f"{tokens[clause].text} ({label}) in {expr!r} merges the series of clusters")

    for i, tok in enumerate(tokens):
        if i in skip:
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.text == "{":
            close = _closing(tokens, i)
            skip.update(range(i, close + 1))
            # a bare matcher selector ({job="x"}): the filter goes inside, unless a metric name precedes it
            prev = tokens[i - 1] if i > 0 else None
            if matcher and not (prev and prev.kind == "ident" and i - 1 not in skip):
                edits.append((tok.end, f"{matcher}, " if close > i + 1 else matcher))
            continue
        if tok.text == "[":
            skip.update(range(i, _closing(tokens, i) + 1))
            continue
        if tok.kind != "ident":
            continue
        word = tok.text.lower()
        if word in ("by", "on"):
            ensure(i)
        elif word in ("without", "ignoring"):
            refuse(i)
        elif word in ("group_left", "group_right"):
            if nxt is not None and nxt.text == "(":
                skip.update(range(i + 1, _closing(tokens, i + 1) + 1))
        elif word in AGGREGATIONS and nxt is not None and nxt.text == "(":
            # `sum (...)` with no clause before the body: a clause after it (`sum (x) by (l)`), or none
            close = _closing(tokens, i + 1)
            after = tokens[close + 1] if close + 1 < len(tokens) else None
            if after is None or after.text.lower() not in ("by", "without"):
                edits.append((tok.end, f" by ({label})" + (" " if nxt.start == tok.end else "")))
        elif word in AGGREGATIONS or word in KEYWORDS or word in _LIST_CLAUSES:
            continue
        elif nxt is not None and nxt.text == "(":
            continue  # a function call
        elif matcher and tok.text.lower() not in ("inf", "nan"):
            # a metric name: its selector gains the filter
            if nxt is not None and nxt.text == "{":
                edits.append((nxt.end, f"{matcher}, " if tokens[i + 2].text != "}" else matcher))
                skip.update(range(i + 1, _closing(tokens, i + 1) + 1))
            else:
                edits.append((tok.end, f"{{{matcher}}}"))
    out = expr
    for pos, text in sorted(edits, key=lambda e: e[0], reverse=True):
        out = out[:pos] + text + out[pos:]
    return out


def clustered(expr: str, label: str) -> str:
    """`expr` with every aggregation and vector match keeping `label` (see the module docstring)."""
    return _rewrite(expr, label, None)


def filtered(expr: str, label: str, variable: str = VARIABLE) -> str:
    """`clustered(expr, label)` with `label=~"$variable"` added to every vector selector."""
    return _rewrite(expr, label, f'{label}=~"${variable}"')


def only(expr: str, label: str, value: str) -> str:
    """`clustered(expr, label)` with `label="value"` added to every vector selector: a query written for one
    cluster's own Prometheus (a KEDA trigger, a verdict), run on the store of many as that cluster sees it."""
    quoted = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return _rewrite(expr, label, f"{label}={quoted}")


def variable_query(query: str, label: str, variable: str = VARIABLE) -> str:
    """A Grafana `label_values(selector, name)` query filtered on the cluster variable."""
    m = _LABEL_VALUES.fullmatch(query.strip())
    if m is None:
        return query
    return f"label_values({filtered(m['selector'], label, variable)}, {m['label']})"
