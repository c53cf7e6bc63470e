"""Telemetry: a canonical series the engine's version should expose is missing (LLMMetricMissing): a renamed
or hidden engine metric. Named first, as every later verdict on that series reads nothing."""

from __future__ import annotations

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Sample, per_sample


def queries(limits: Limits) -> dict[str, str]:
    return {"missing": "llm_metric_present{$NS} == 0"}


def says(s: Sample) -> str:
    return (
        f"{s.label('metric')} is missing on {s.label('namespace')}/{s.label('pod')}: {s.label('engine')} "
        f"{s.label('version')} does not expose {s.label('source')} (renamed or hidden), so every panel, alert "
        "and autoscaler on it reads nothing"
    )


VERDICT = per_sample(
    "missing",
    says,
    id="telemetry.metric_missing",
    stage="telemetry",
    owner="platform",
    panel="Missing canonical series",
    fix="Upgrade the exporter's mapping, or run the engine with the flag that restores the name for one release "
    "(vLLM: --show-hidden-metrics-for-version); `llm-exporter check` finds every query that went empty.",
    queries=queries,
    scope=("namespace",),
    weight=3,
)
