"""Alert group llm-inference.queries: autoscaler and dashboard queries the watchdog finds empty."""

from __future__ import annotations

from alerts.model import Alert
from alerts.thresholds import Thresholds

GROUP = "llm-inference.queries"

_QUERY_KEY = "job, instance, kind, namespace, name, location"
_SUCCESSOR = (
    "{{ if $labels.successor }}The release history names the successor: {{ $labels.renamed }} is now "
    "{{ $labels.successor }}{{ if $labels.fix }}; the query rewritten: {{ $labels.fix }}{{ end }}. {{ end }}"
)


def _with_successor(verdict: str) -> str:
    """The watchdog's verdict with the labels of llm_query_successor_info (renamed, successor, fix) where the
    release history knows the successor, so that the alert itself carries it; the verdict alone elsewhere."""
    return (
        f"({verdict} * on ({_QUERY_KEY}) group_left (renamed, successor, fix) llm_query_successor_info "
        f"or on ({_QUERY_KEY}) {verdict})"
    )


def alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            name="LLMAutoscalerQueryEmpty",
            group=GROUP,
            query=_with_successor('llm_query_empty{kind=~"ScaledObject|ScaledJob"}'),
            op="==",
            threshold=1,
            for_=t.autoscaler_query_empty_for,
            severity="critical",
            summary=(
                "The query of {{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }} ({{ $labels.location }}) "
                "returns nothing."
            ),
            description=(
                "KEDA reads an empty result as 0 (ignoreNullValues defaults to true) and scales the workload down, at "
                "peak too. Usually a renamed metric: llm_query_empty_reason and the exporter's log say why. "
                + _SUCCESSOR
                + "Point the trigger at the stable llm_* name."
            ),
        ),
        Alert(
            name="LLMDashboardQueryEmpty",
            group=GROUP,
            query=_with_successor('llm_query_empty{kind="Dashboard"}'),
            op="==",
            threshold=1,
            for_=t.dashboard_query_empty_for,
            severity="warning",
            summary=(
                "Dashboard ConfigMap {{ $labels.namespace }}/{{ $labels.name }} has a query that returns nothing: "
                "{{ $labels.location }}."
            ),
            description=(
                "The panel is blank, and looks like an idle service. Usually a renamed metric: llm_query_empty_reason "
                "and the exporter's log say why. "
                + _SUCCESSOR
                + "`llm-exporter check` on the dashboard suggests the fix."
            ),
        ),
        Alert(
            name="LLMQueryWatchdogFailing",
            group=GROUP,
            query='increase(llm_query_check_errors_total{reason=~"unreachable|unauthorized|credentials"}[15m])',
            op=">",
            threshold=0,
            for_=t.query_watchdog_failing_for,
            severity="warning",
            summary="The query watchdog on {{ $labels.instance }} cannot query Prometheus ({{ $labels.reason }}).",
            description=(
                "The autoscaler and dashboard queries are not being checked: LLMAutoscalerQueryEmpty cannot fire. "
                "Check cluster.watchdog.prometheus (URL, credentials, CA) and the exporter's log."
            ),
        ),
    ]
