"""Telemetry: the cluster role's view of the API server is stale (LLMClusterViewStale): the autoscalers,
pending pods, free GPUs and routes the scaling, placement and ingress stages read describe the past.

A cluster without the cluster role (a single node, the demo) is not a telemetry problem: those stages then
find nothing, and a wait they might explain is reported as unexplained, saying they were not judged."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, number


def queries(limits: Limits) -> dict[str, str]:
    return {
        "age": f"time() - llm_kubernetes_last_sync_timestamp_seconds{{}} > {number(limits.cluster_view_stale_seconds)}",
        "absent": "absent(llm_kubernetes_last_sync_timestamp_seconds{})",
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    return [
        VERDICT.finding(
            f"the cluster view of {s.label('instance')} is {number(s.value)} s old: autoscalers, pending pods, free "
            "GPUs and routes describe the past",
            [r.evidence(VERDICT.qid("age"), s.value)],
            weight=s.value,
        )
        for s in r.samples(VERDICT.qid("age"))
    ]


VERDICT = Verdict(
    id="telemetry.cluster_view",
    stage="telemetry",
    owner="platform",
    panel="Exporter collectors succeeding",
    fix="Restore the cluster role's access to the API server (network policy, RBAC after an upgrade); restart it "
    "if its watches are stuck.",
    queries=queries,
    judge=judge,
)
