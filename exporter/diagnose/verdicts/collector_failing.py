"""Telemetry: a collector of the exporter failing (LLMExporterCollectorFailing): one part of the view is stale."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict


def queries(limits: Limits) -> dict[str, str]:
    # a source absent by design (no NVML on a CPU node) is reported by the exporter, but it is not a failure
    return {
        "failing": "(llm_exporter_collector_success{} unless on (job, instance, collector)"
        " (llm_exporter_collector_unavailable{} == 1)) == 0"
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    return [
        VERDICT.finding(
            f"collector {s.label('collector')} of the exporter on {s.label('instance')} is failing: its part of the "
            "view is stale or missing",
            [r.evidence(VERDICT.qid("failing"), s.value)],
        )
        for s in r.samples(VERDICT.qid("failing"))
    ]


VERDICT = Verdict(
    id="telemetry.collector_failing",
    stage="telemetry",
    owner="platform",
    panel="Exporter collectors succeeding",
    fix="The exporter's log names the collector and the error; the collector recovers on the next scrape.",
    queries=queries,
    judge=judge,
)
