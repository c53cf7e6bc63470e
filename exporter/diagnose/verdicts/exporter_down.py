"""Telemetry: an exporter target Prometheus cannot scrape, or none discovered at all (LLMExporterDown)."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict


def queries(limits: Limits) -> dict[str, str]:
    job = f'job="{limits.exporter_job}"'
    return {"down": f"up{{{job}}} == 0", "absent": f"absent(up{{{job}}})"}


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    out = [
        VERDICT.finding(
            f"exporter target {s.label('instance')} is down: the engines, GPUs or cluster view it reports are "
            "missing from every later stage",
            [r.evidence(VERDICT.qid("down"), s.value)],
            weight=1,
        )
        for s in r.samples(VERDICT.qid("down"))
    ]
    if r.samples(VERDICT.qid("absent")):
        out.append(
            VERDICT.finding(
                f'no target of job "{r.limits.exporter_job}" is discovered: Prometheus scrapes no exporter',
                [r.evidence(VERDICT.qid("absent"), 1)],
                weight=2,
            )
        )
    return out


VERDICT = Verdict(
    id="telemetry.exporter_down",
    stage="telemetry",
    owner="platform",
    panel="Exporter collectors succeeding",
    fix="Check the exporter pod and its ServiceMonitor/PodMonitor: Prometheus' Targets page for the job "
    "(missing entirely: the monitor is not selected by your Prometheus; down: the pods or the network policy).",
    queries=queries,
    judge=judge,
)
