"""Telemetry: an engine the exporter cannot scrape (LLMEngineDown): its queue and latency are unknown."""

from __future__ import annotations

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Sample, per_sample


def queries(limits: Limits) -> dict[str, str]:
    return {"down": "llm_engine_up{$NS} == 0"}


def says(s: Sample) -> str:
    return (
        f"engine {s.label('namespace')}/{s.label('pod')} does not answer the exporter: its queue and latencies "
        "are unknown"
    )


VERDICT = per_sample(
    "down",
    says,
    id="telemetry.engine_down",
    stage="telemetry",
    owner="platform",
    panel="Engines up",
    fix="llm_engine_scrape_error gives the reason; restart a hung engine, fix the port or path annotation.",
    queries=queries,
    scope=("namespace",),
)
