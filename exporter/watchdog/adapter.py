"""The one bridge to `exporter.check` (query extraction, Grafana variables, diagnosis); see its docstring.

Dashboards are kept whole and expanded at every run with the watchdog's Prometheus: variables resolved as
Grafana resolves them on load (query variables ask it), repeated panels once per value.

On a store of many clusters (Thanos Query) the watchdog checks as its own cluster (`cluster`): every query, and
every query of its diagnosis, gets the cluster's label matcher (KEDA reads its own cluster's series), and a
dashboard's cluster variable resolves to the cluster, as a person picking it in Grafana sees the panels.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from exporter.check.evaluate import Checker
from exporter.check.inputs import Query, dashboard_queries
from exporter.check.scope import Cluster, ClusterScoped
from exporter.sources.prometheus import PartialResponseError, Prometheus, PrometheusError

__all__ = ["Cluster", "Evaluator", "Outcome", "Query", "dashboard_text", "keda_query"]

SYNTAX_ERROR = 400  # the status a PromQL syntax error gets from Prometheus itself


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str  # "data", "empty", "allowed" (empty, and marked or known as expected) or "error"
    reasons: tuple[str, ...] = ()
    http_status: int = 0  # for "error": the answer's HTTP status, 0 when there was none
    partial: str = ""  # for "error": the store behind Thanos Query that did not answer
    fix: str | None = None  # the query rewritten to the successor names the release history knows
    renames: tuple[tuple[str, str], ...] = ()  # (missing name, its successor) as the release history names them


def dashboard_text(text: str) -> str:
    """A dashboard's JSON text, compacted; not JSON, or not a dashboard: ValueError."""
    dashboard = json.loads(text)
    if not isinstance(dashboard, dict) or not ("panels" in dashboard or "rows" in dashboard):
        raise ValueError("not a Grafana dashboard (no panels or rows)")
    return json.dumps(dashboard, separators=(",", ":"))


def keda_query(expr: str) -> Query:
    """A trigger's query: KEDA runs it as written."""
    return Query("watchdog", "", expr, kind="keda")


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
    """Runs queries against one Prometheus for one watchdog run (names, releases, variables cached for it);
    with `cluster`, as that cluster of a store of many sees them (see the module docstring)."""

    def __init__(self, prometheus: Prometheus, lookback: str = "1d", cluster: Cluster | None = None) -> None:
        self._recorder = _Recorder(prometheus)
        self._cluster = cluster
        scoped = ClusterScoped(self._recorder, cluster) if cluster is not None else self._recorder
        self._checker = Checker(scoped, lookback=lookback)

    def dashboard(self, text: str) -> list[tuple[str, str, Query]]:
        """(where, query as written, query as Grafana runs it) of a dashboard kept by `dashboard_text`."""
        found = dashboard_queries(json.loads(text), "", None, self._recorder, cluster=self._cluster)
        # a Loki or Tempo panel's query is not PromQL: never sent to Prometheus, never an error
        return [(q.where, q.written, q) for q in found if not q.datasource]

    def evaluate(self, query: Query) -> Outcome:
        self._recorder.error = None
        result = self._checker.check(query)
        if result.status == "ok":
            return Outcome("data")
        if result.status == "error":
            error = self._recorder.error
            partial = error.part if isinstance(error, PartialResponseError) else ""
            return Outcome("error", tuple(result.reasons), error.status if error else SYNTAX_ERROR, partial)
        return Outcome(result.status, tuple(result.reasons), fix=result.fix, renames=tuple(result.renames.items()))
