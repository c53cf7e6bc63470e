"""One query against a Prometheus: ok, empty (and why, and the fix) or error.

Why a query is empty, in the manner of pint's series check: a metric never present, one that disappeared
(present earlier in the lookback window), or a label matcher that matches nothing (and which). A missing
engine name is explained from the engines' release histories (`diagnosis`), with the rewritten query.
Alerting rules are empty when healthy, so only their selectors must return series.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from exporter.check import diagnosis, names
from exporter.check.inputs import Query
from exporter.check.judge import Hidden
from exporter.check.tables import owner
from exporter.promql.parse import Binary, Node, VectorSelector, parse, walk
from exporter.promql.selectors import Selector, rename, selectors
from exporter.promql.tokens import PromQLSyntaxError
from exporter.sources.prometheus import Prometheus, PrometheusError

ALLOW_EMPTY = "# llm-exporter: allow-empty"
"""A PromQL comment that marks a query whose empty result is expected; it is reported, not failed."""

SPARSE = frozenset({"llm_pending_pod_gpus_requested", "llm_engine_scrape_error", "llm_gpu_field_unavailable"})
"""Catalogue metrics that exist only while something is wrong: their absence is the healthy state."""


@dataclass
class Result:
    query: Query
    status: str  # "ok", "empty", "allowed" or "error"
    reasons: list[str] = field(default_factory=list)
    fix: str | None = None  # the query as written, rewritten to the successor names
    renames: dict[str, str] = field(default_factory=dict)  # missing name → replacement
    rules: list[str] = field(default_factory=list)  # the lints that found it (SARIF rule ids), most specific first


class Checker:
    def __init__(self, prometheus: Prometheus, lookback: str = "7d", now: float | None = None) -> None:
        self.prometheus = prometheus
        self.lookback = lookback
        self.now = now
        self._names: list[str] | None = None
        self._running: dict[str, diagnosis.Running] | None = None

    def check(self, query: Query) -> Result:
        try:
            parsed = selectors(query.expr)
            if not query.alert and self.prometheus.query(query.expr):
                return self._warnings(query, parsed)
            renames: dict[str, str] = {}
            rules: list[str] = []
            problems = [p for s in _unique(parsed) if (p := self.diagnose(s, renames, rules))]
        except (PrometheusError, PromQLSyntaxError) as exc:
            return Result(query, "error", [str(exc)])
        if query.alert and not problems:
            return Result(query, "ok")
        if not problems:
            problems = [
                "every selector returns series: the empty result comes from the query's operators (a "
                "join, a filter or comparison, or a rate over fewer than two samples)"
            ]
        problems.extend(query.notes)
        allowed = ALLOW_EMPTY in query.expr or all(_sparse(p) for p in problems)
        fix = None
        if renames:
            fix = query.written
            for old, new in renames.items():
                fix = rename(fix, old, new)
        return Result(query, "allowed" if allowed else "empty", problems, fix, renames, list(dict.fromkeys(rules)))

    def _warnings(self, query: Query, parsed: list[Selector]) -> Result:
        """A query with data can still be wrong: an `or vector(0)` hiding an empty side (a permanent 0), or a
        scale-from-zero ScaledObject reading only series its own engine pods write (it can never activate)."""
        reasons, rules = [], []
        try:
            tree = parse(query.expr)
        except PromQLSyntaxError:
            return Result(query, "ok")
        for hidden in constant_or_sides(tree):
            if not self.prometheus.query(query.expr[hidden.empty.start : hidden.empty.end]):
                reasons.append(hidden_reason(query.expr, hidden, "in Prometheus"))
                inner = selectors(query.expr[hidden.empty.start : hidden.empty.end])
                reasons.extend(p for s in _unique(inner) if (p := self.diagnose(s)))
                rules.append("or-constant-hides-empty")
        renames: dict[str, str] = {}
        for sel in _unique(parsed):
            name = sel.name or _anchored_name(sel)
            if (old := self._deprecated(name)) is not None:
                reasons.append(f"{sel.name or sel}: {old.text}")
                rules.append("deprecated-name")
                if old.replacement:
                    renames[_family(name, old.name)] = old.replacement
        names_ = [s.name or _anchored_name(s) for s in parsed]
        if query.scales_to_zero and names_ and all(_engine_pods_only(n) for n in names_):
            reasons.append(scale_from_zero_reason(query))
            rules.append("scale-from-zero")
        fix = None
        if renames:
            fix = query.written
            for before, after in renames.items():
                fix = rename(fix, before, after)
        return Result(query, "warning" if reasons else "ok", reasons, fix, renames, rules=rules)

    def diagnose(self, sel: Selector, renames: dict[str, str] | None = None, rules: list[str] | None = None) -> str:
        """Why `sel` returns nothing, or "" when it returns series; records a known rename in `renames` and
        the lint that found it in `rules`."""
        rules = [] if rules is None else rules
        if not sel.name:
            named = _anchored_name(sel)
            if self._count(str(sel)):
                return ""
            return self.diagnose(Selector(named, ()), renames, rules) if named else f"{sel}: matches no series"
        if self._count(sel.name):
            return self._matchers(sel)
        tag = "(sparse: absent while healthy) " if sel.name in SPARSE else ""
        last = self._last_seen(sel.name)
        if last is not None:
            ago = "" if math.isnan(last) else f", last seen {_duration((self.now or time.time()) - last)} ago"
            return f"{tag}{sel.name}: disappeared: present in the last {self.lookback} but not now{ago}"
        native = self._native(sel.name)
        if native:
            rules.append("native-histogram-bucket")
            if sel.name.endswith("_bucket") and renames is not None:
                renames[sel.name] = sel.name.removesuffix("_bucket")
            return f"{tag}{sel.name}: never present in the last {self.lookback}: {native}"
        lint = self._lint(sel.name)
        if lint is not None:
            rules.append(lint.rule)
            if lint.replacement and renames is not None:
                renames[sel.name] = lint.replacement
            return f"{tag}{sel.name}: never present in the last {self.lookback}: {lint.text}"
        known = diagnosis.explain(sel.name, self.running())
        if known is not None:
            rules.append("renamed" if known.replacement else "removed")
            if known.replacement and renames is not None:
                renames[_family(sel.name, known.name)] = known.replacement
            return f"{tag}{sel.name}: never present in the last {self.lookback}: {known.text}"
        hint = diagnosis.similar(sel.name, self._all_names(), _prefix(sel.name))
        return f"{tag}{sel.name}: never present in the last {self.lookback} (not scraped, or renamed)" + (
            f"; {hint}" if hint else ""
        )

    def _native(self, name: str) -> str:
        """Why a classic histogram's sample is missing when Prometheus stores the family as a native histogram
        (the scrape's `convert_classic_histograms_to_nhcb`): "" when it does not."""
        family, suffix = re.subn(r"_(bucket|sum|count)$", "", name)
        if not suffix or not self._count(f"{{__name__={_quote(family)}}}"):
            return ""
        part = name[len(family) :]
        use = (
            f"query {family} (histogram_quantile reads it as is)"
            if part == "_bucket"
            else (f"use {'histogram_sum' if part == '_sum' else 'histogram_count'}({family})")
        )
        stored = f"Prometheus stores {family} as a native histogram (the scrape converts classic ones)"
        return f"{stored}: no {part} series; {use}"

    def _lint(self, name: str) -> names.Finding | None:
        """What the release tables say that the history does not: a flag the family needs, a wrong separator,
        a counter without `_total`, a known look-alike (renames and removals stay with `diagnosis`)."""
        table = owner(name)
        if table is None:
            return None
        running = self.running().get(table.engine)
        version = table.release(running.version) if running is not None else None
        found = names.explain(name, version, table)
        return found if found is not None and found.rule in LIVE_LINTS else None

    def _deprecated(self, name: str) -> diagnosis.Diagnosis | None:
        """A name the running release still writes in the window of a declared rename (None when none)."""
        table = owner(name) if name else None
        running = self.running().get(table.engine) if table is not None else None
        return diagnosis.deprecated(name, running.version) if running is not None else None

    def running(self) -> dict[str, diagnosis.Running]:
        """The running engines' releases: from the exporter's llm_engine_info, else from their own series."""
        if self._running is None:
            self._running = diagnosis.infer_running(self._all_names())
            try:
                info = self.prometheus.query("llm_engine_info")
            except PrometheusError:
                info = []
            for row in info:
                engine, version = row["metric"].get("engine", ""), row["metric"].get("version", "")
                if engine and version:
                    self._running[engine] = diagnosis.Running(engine, version, "from llm_engine_info")
        return self._running

    def _matchers(self, sel: Selector) -> str:
        if not sel.matchers or self._count(str(sel)):
            return ""
        for m in sel.matchers:
            if self._count(f"{sel.name}{{{m}}}"):
                continue
            if not self._count(f'{sel.name}{{{m.label}!=""}}'):
                if m.op in ("=", "=~") and m.value and m.value not in (".*", "(.*)"):
                    table = owner(sel.name)
                    gated = names.label_flag(table, [m]) if table is not None else None
                    gated = gated or (names.label_renamed(table, sel.name, [m]) if table is not None else None)
                    why = f"; {gated.text}" if gated is not None else ""
                    return f"{sel.name}: no series has label {m.label!r}, so {m} matches nothing{why}"
                continue
            values = sorted(
                r["metric"].get(m.label, "") for r in self.prometheus.query(f"count by ({m.label}) ({sel.name})")
            )
            shown = ", ".join(repr(v) for v in values[:10]) + (", ..." if len(values) > 10 else "")
            return f"{sel.name}: label matcher {m} matches nothing; {m.label} has: {shown}"
        return f"{sel}: each matcher matches some series, but no series matches all of them"

    def _count(self, selector: str) -> bool:
        return bool(self.prometheus.query(f"count({selector})"))

    def _last_seen(self, name: str) -> float | None:
        """When `name` was last seen within the lookback (approximately), or None when it never was."""
        if not self.prometheus.query(f"count(last_over_time({name}[{self.lookback}]))"):
            return None
        # a 1m-step subquery for the time: it can miss a series that lived less than a minute, hence the fallback
        result = self.prometheus.query(f"max(max_over_time(timestamp({name})[{self.lookback}:1m]))")
        return float(result[0]["value"][1]) if result else float("nan")

    def _all_names(self) -> list[str]:
        if self._names is None:
            try:
                self._names = self.prometheus.label_values("__name__")
            except PrometheusError:
                self._names = []
        return self._names


LIVE_LINTS = frozenset(
    {"needs-flag", "wrong-separator", "counter-without-total", "family-name", "summary-no-buckets", "look-alike"}
)


def constant_or_sides(tree: Node) -> list[Hidden]:
    """Every `a or <constant>` (`or vector(0)`, `or on() vector(0)`), with its non-constant side."""
    found = []
    for node in walk(tree):
        if isinstance(node, Binary) and node.op == "or":
            for side, other in ((node.lhs, node.rhs), (node.rhs, node.lhs)):
                if not _has_selector(other) and _has_selector(side):
                    found.append(Hidden(node, side, other, ()))
    return found


def _has_selector(node: Node) -> bool:
    return any(isinstance(n, VectorSelector) for n in walk(node))


def hidden_reason(expr: str, hidden: Hidden, where: str) -> str:
    empty = expr[hidden.empty.start : hidden.empty.end]
    constant = expr[hidden.constant.start : hidden.constant.end]
    return (
        f"`{empty}` is empty {where}; the `or {constant}` hides it: the panel shows a permanent "
        f"{constant} instead of the data"
    )


def scale_from_zero_reason(query: Query) -> str:
    return (
        f"the ScaledObject scales to zero ({query.scales_to_zero}) but this query reads only series the engine "
        "pods themselves write: at zero replicas nothing writes them, so the trigger can never activate; keep "
        "minReplicaCount at 1, or trigger on series that exist without the pods (a gateway's or router's queue)"
    )


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def anchored_name(sel: Selector) -> str:
    return _anchored_name(sel)


def _engine_pods_only(name: str) -> bool:
    """`name` is written by the engine pods themselves (not by a router in a pod of its own)."""
    table = owner(name) if name else None
    return table is not None and table.in_engine_pods


def _prefix(name: str) -> str:
    table = owner(name)
    return table.prefixes[0] if table is not None else ""


def _anchored_name(sel: Selector) -> str:
    """The one name `{__name__=~"^name$"}` selects (prometheus-adapter's seriesQuery style), else ""."""
    for m in sel.matchers:
        if m.label == "__name__" and m.op == "=~":
            name = m.value.removeprefix("^").removesuffix("$")
            if re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", name):
                return name
    return ""


def _family(sample: str, family: str) -> str:
    """The name to rename in the query text: the family when the query names one of its samples."""
    return family if sample.startswith(family) else sample


def _unique(items: Iterable[Selector]) -> list[Selector]:
    return list(dict.fromkeys(items))


def _sparse(problem: str) -> bool:
    return problem.startswith("(sparse")


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
