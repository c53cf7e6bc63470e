"""The one bridge to `exporter.check` (query extraction, Grafana variables, diagnosis); see its docstring.

Dashboards keep, per ConfigMap, their queries as written and their `templating` section; the variables are
resolved at every run with the watchdog's Prometheus (query variables ask it), as Grafana would on load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from exporter.check import variables
from exporter.check.evaluate import Checker
from exporter.check.inputs import Query, dashboard_queries
from exporter.sources.prometheus import Prometheus, PrometheusError

SYNTAX_ERROR = 400  # the status a PromQL syntax error gets from Prometheus itself


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str  # "data", "empty", "allowed" (empty, and marked or known as expected) or "error"
    reasons: tuple[str, ...] = ()
    http_status: int = 0  # for "error": the answer's HTTP status, 0 when there was none
    fix: str | None = None  # the query rewritten to the successor names the release history knows


def dashboard_exprs(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The `templating` section (as compact JSON) and (location, query as written) of a dashboard's JSON text.

    Not JSON, or not a dashboard: ValueError.
    """
    dashboard = json.loads(text)
    if not isinstance(dashboard, dict) or not ("panels" in dashboard or "rows" in dashboard):
        raise ValueError("not a Grafana dashboard (no panels or rows)")
    templating = json.dumps(dashboard.get("templating") or {}, separators=(",", ":"), sort_keys=True)
    return templating, [(q.where, q.written) for q in dashboard_queries(dashboard, "")]


class _Recorder:
    """A Prometheus that remembers the last error, so a failed check can say which HTTP status caused it."""

    def __init__(self, inner: Prometheus) -> None:
        self.inner = inner
        self.error: PrometheusError | None = None

    def query(self, expr: str) -> list[dict[str, Any]]:
        try:
            return self.inner.query(expr)
        except PrometheusError as exc:
            self.error = exc
            raise

    def label_values(self, label: str) -> list[str]:
        try:
            return self.inner.label_values(label)
        except PrometheusError as exc:
            self.error = exc
            raise


class Evaluator:
    """Runs queries against one Prometheus for one watchdog run (names, releases, variables cached for it)."""

    def __init__(self, prometheus: Prometheus, lookback: str = "1d") -> None:
        self._recorder = _Recorder(prometheus)
        self._checker = Checker(self._recorder, lookback=lookback)
        self._resolved: dict[str, variables.Resolution] = {}

    def evaluate(self, expr: str, templating: str | None = None) -> Outcome:
        """`expr` as KEDA runs it (templating None), or as Grafana does with the dashboard's `templating`."""
        self._recorder.error = None
        if templating is None:
            query = Query("watchdog", "", expr, kind="keda")
        else:
            resolution = self._resolution(templating)
            expanded = variables.interpolate(expr, resolution.values)
            query = Query("watchdog", "", expanded, raw=expr, kind="dashboard", notes=tuple(resolution.problems))
        result = self._checker.check(query)
        if result.status == "ok":
            return Outcome("data")
        if result.status == "error":
            error = self._recorder.error
            return Outcome("error", tuple(result.reasons), error.status if error else SYNTAX_ERROR)
        return Outcome(result.status, tuple(result.reasons), fix=result.fix)

    def _resolution(self, templating: str) -> variables.Resolution:
        if templating not in self._resolved:
            parsed = variables.parse({"templating": json.loads(templating)})
            self._resolved[templating] = variables.resolve(parsed, self._recorder)
        return self._resolved[templating]
