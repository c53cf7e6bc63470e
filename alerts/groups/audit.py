"""Alert group llm-inference.audit: deployment checks (`exporter.audit`), one alert per failing check of an
engine workload; the advisory checks (severity info on the series) alert at info."""

from __future__ import annotations

from alerts.model import Alert
from alerts.thresholds import Thresholds

GROUP = "llm-inference.audit"


def alerts(t: Thresholds) -> list[Alert]:
    summary = (
        "{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.workload }} fails deployment check {{ $labels.check }}."
    )
    description = (
        "The engine workload has a setting the write-ups name as a cause of slow or broken LLM serving (see the "
        "runbook section of the check). `llm-exporter audit -n {{ $labels.namespace }}` prints the reason, the "
        'fix and the threshold it used; a workload that means it opts out with llm-exporter.io/audit-skip: "'
        '{{ $labels.check }}".'
    )
    return [
        Alert(
            name="LLMWorkloadCheckFailing",
            group=GROUP,
            query='llm_workload_check_failing{severity="warning"}',
            op="==",
            threshold=1,
            for_=t.workload_check_failing_for,
            severity="warning",
            summary=summary,
            description=description,
        ),
        Alert(
            name="LLMWorkloadCheckAdvisory",
            group=GROUP,
            query='llm_workload_check_failing{severity="info"}',
            op="==",
            threshold=1,
            for_=t.workload_check_failing_for,
            severity="info",
            summary=summary,
            description=description,
        ),
    ]
