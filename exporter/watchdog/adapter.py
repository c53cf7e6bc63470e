"""The one bridge to the query tooling of `check`: extraction of dashboard queries and their diagnosis.

Switching `check`'s implementation (Grafana variable resolution, release-history diagnosis) is a change to
this file only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from exporter.bundle.check import Checker
from exporter.bundle.queries import Query, dashboard_queries
from exporter.sources.prometheus import Prometheus, PrometheusError

SYNTAX_ERROR = 400  # the status a PromQL syntax error gets from Prometheus itself


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str  # "data", "empty", "allowed" (empty, and marked as expected) or "error"
    reasons: tuple[str, ...] = ()
    http_status: int = 0  # for "error": the answer's HTTP status, 0 when there was none


def dashboard_exprs(text: str) -> list[tuple[str, str]]:
    """(location, expr) of every query of a dashboard's JSON text; not JSON, or not a dashboard: ValueError."""
    dashboard = json.loads(text)
    if not isinstance(dashboard, dict) or not ("panels" in dashboard or "rows" in dashboard):
        raise ValueError("not a Grafana dashboard (no panels or rows)")
    return [(q.where, q.expr) for q in dashboard_queries(dashboard, "", {})]


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
        return self.inner.label_values(label)


class Evaluator:
    """Runs queries against one Prometheus for one watchdog run (names seen are cached for the run)."""

    def __init__(self, prometheus: Prometheus, lookback: str = "1d") -> None:
        self._recorder = _Recorder(prometheus)
        self._checker = Checker(self._recorder, lookback=lookback)

    def evaluate(self, expr: str) -> Outcome:
        self._recorder.error = None
        result = self._checker.check(Query("watchdog", "", expr))
        if result.status == "ok":
            return Outcome("data")
        if result.status == "error":
            error = self._recorder.error
            return Outcome("error", tuple(result.reasons), error.status if error else SYNTAX_ERROR)
        return Outcome(result.status, tuple(result.reasons))
