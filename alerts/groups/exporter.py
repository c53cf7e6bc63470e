"""Alert group llm-inference.exporter: the exporter itself (failing collectors, targets down)."""

from __future__ import annotations

from alerts.model import Alert
from alerts.thresholds import Thresholds

GROUP = "llm-inference.exporter"


def alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            name="LLMExporterCollectorFailing",
            group=GROUP,
            # a source absent by design (no NVML on a CPU node) is reported, but it is not a failure
            query=(
                "(llm_exporter_collector_success unless on (job, instance, collector) "
                "(llm_exporter_collector_unavailable == 1))"
            ),
            op="==",
            threshold=0,
            for_=t.collector_failing_for,
            severity="warning",
            summary="Collector {{ $labels.collector }} of the exporter on {{ $labels.instance }} is failing.",
            description=(
                "One part of the exporter's view is stale or missing while the rest works. The exporter logs name "
                "the error."
            ),
        ),
        Alert(
            name="LLMExporterDown",
            group=GROUP,
            # one alert per target that fails, and one when no target is discovered at all; value 1 in both
            # cases, so that Grafana's "last value > 0" condition holds too
            query=f'1 - up{{job="{t.exporter_job}"}} > 0 or absent(up{{job="{t.exporter_job}"}})',
            for_=t.exporter_down_for,
            severity="critical",
            summary=(
                "{{ if $labels.instance }}llm-exporter target {{ $labels.instance }} is down.{{ else }}"
                "No llm-exporter target is discovered.{{ end }}"
            ),
            description=(
                f'Prometheus cannot scrape this exporter of job "{t.exporter_job}": the LLM alerts for its node or '
                "for the cluster view are blind. Check the exporter pod and the ServiceMonitor."
            ),
        ),
    ]
