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

from exporter.check import diagnosis
from exporter.check.inputs import Query
from exporter.check.promql import PromQLSyntaxError, Selector, rename, selectors
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
                return Result(query, "ok")
            renames: dict[str, str] = {}
            problems = [p for s in _unique(parsed) if (p := self.diagnose(s, renames))]
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
        return Result(query, "allowed" if allowed else "empty", problems, fix, renames)

    def diagnose(self, sel: Selector, renames: dict[str, str] | None = None) -> str:
        """Why `sel` returns nothing, or "" when it returns series; records a known rename in `renames`."""
        if not sel.name:
            named = _anchored_name(sel)
            if self._count(str(sel)):
                return ""
            return self.diagnose(Selector(named, ()), renames) if named else f"{sel}: matches no series"
        if self._count(sel.name):
            return self._matchers(sel)
        tag = "(sparse: absent while healthy) " if sel.name in SPARSE else ""
        last = self._last_seen(sel.name)
        if last is not None:
            ago = "" if math.isnan(last) else f", last seen {_duration((self.now or time.time()) - last)} ago"
            return f"{tag}{sel.name}: disappeared: present in the last {self.lookback} but not now{ago}"
        known = diagnosis.explain(sel.name, self.running())
        if known is not None:
            if known.replacement and renames is not None:
                renames[_family(sel.name, known.name)] = known.replacement
            return f"{tag}{sel.name}: never present in the last {self.lookback}: {known.text}"
        hint = diagnosis.similar(sel.name, self._all_names())
        return f"{tag}{sel.name}: never present in the last {self.lookback} (not scraped, or renamed)" + (
            f"; {hint}" if hint else ""
        )

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
                    return f"{sel.name}: no series has label {m.label!r}, so {m} matches nothing"
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
