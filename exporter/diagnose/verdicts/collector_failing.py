"""Telemetry: a collector of the exporter failing (LLMExporterCollectorFailing): one part of the view is stale."""

from __future__ import annotations

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Sample, per_sample


def queries(limits: Limits) -> dict[str, str]:
    # a source absent by design (no NVML on a CPU node) is reported by the exporter, but it is not a failure
    return {
        "failing": "(llm_exporter_collector_success{} unless on (job, instance, collector)"
        " (llm_exporter_collector_unavailable{} == 1)) == 0"
    }


def says(s: Sample) -> str:
    return (
        f"collector {s.label('collector')} of the exporter on {s.label('instance')} is failing: its part of the "
        "view is stale or missing"
    )


VERDICT = per_sample(
    "failing",
    says,
    id="telemetry.collector_failing",
    stage="telemetry",
    owner="platform",
    panel="Exporter collectors succeeding",
    fix="The exporter's log names the collector and the error; the collector recovers on the next scrape.",
    queries=queries,
    recorded=False,
)
