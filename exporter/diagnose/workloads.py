"""Which model each engine workload serves: autoscalers, replicas and pending pods are per workload or pod,
the engine series per model. The join goes through the cluster role's `llm_replica_pod_info`."""

from __future__ import annotations

from exporter.diagnose.model import Readings

MODELS = (
    "group by (namespace, workload, model) (max by (namespace, pod, workload) (llm_replica_pod_info{$NS})"
    " * on (namespace, pod) group_left (model) group by (namespace, pod, model)"
    " (last_over_time(llm_requests_running{$NSM}[$W])))"
)


def models(r: Readings, qid: str) -> dict[tuple[str, str], str]:
    """(namespace, workload) → model (the first, should one workload serve several)."""
    out: dict[tuple[str, str], str] = {}
    for s in sorted(r.samples(qid), key=lambda s: s.label("model")):
        out.setdefault((s.label("namespace"), s.label("workload")), s.label("model"))
    return out


def in_scope(r: Readings, qid: str, namespace: str, workload: str) -> tuple[bool, str]:
    """Whether the workload is in the walk's scope, and its model ("" when unknown)."""
    model = models(r, qid).get((namespace, workload), "")
    return (not r.model or model == r.model), model
