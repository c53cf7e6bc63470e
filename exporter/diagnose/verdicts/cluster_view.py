"""Telemetry: the cluster role's view of the API server is stale (LLMClusterViewStale): the autoscalers,
pending pods, free GPUs and routes the scaling, placement and ingress stages read describe the past.

A cluster without the cluster role (a single node, the demo) is not a telemetry problem: those stages then
find nothing, and a wait they might explain is reported as unexplained, saying they were not judged."""

from __future__ import annotations

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Sample, number, per_sample


def queries(limits: Limits) -> dict[str, str]:
    return {
        "age": f"time() - llm_kubernetes_last_sync_timestamp_seconds{{}} > {number(limits.cluster_view_stale_seconds)}",
        "absent": "absent(llm_kubernetes_last_sync_timestamp_seconds{})",
    }


def says(s: Sample) -> str:
    return (
        f"the cluster view of {s.label('instance')} is {number(s.value)} s old: autoscalers, pending pods, free "
        "GPUs and routes describe the past"
    )


VERDICT = per_sample(
    "age",
    says,
    id="telemetry.cluster_view",
    stage="telemetry",
    owner="platform",
    panel="Exporter collectors succeeding",
    fix="Restore the cluster role's access to the API server (network policy, RBAC after an upgrade); restart it "
    "if its watches are stuck.",
    queries=queries,
    weight=lambda s: s.value,
    recorded=False,
)
