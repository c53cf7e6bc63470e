"""Telemetry: an engine the exporter cannot scrape (LLMEngineDown): its queue and latency are unknown."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict


def queries(limits: Limits) -> dict[str, str]:
    return {"down": "llm_engine_up{$NS} == 0"}


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    return [
        VERDICT.finding(
            f"engine {s.label('namespace')}/{s.label('pod')} does not answer the exporter: its queue and latencies "
            "are unknown",
            [r.evidence(VERDICT.qid("down"), s.value)],
            s.label("namespace"),
        )
        for s in r.samples(VERDICT.qid("down"))
    ]


VERDICT = Verdict(
    id="telemetry.engine_down",
    stage="telemetry",
    owner="platform",
    panel="Engines up",
    fix="llm_engine_scrape_error gives the reason; restart a hung engine, fix the port or path annotation.",
    queries=queries,
    judge=judge,
    condition="down",
)
