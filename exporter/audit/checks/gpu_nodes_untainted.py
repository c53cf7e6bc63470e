"""gpu-nodes-untainted: the GPU nodes an engine runs on take any pod (no NoSchedule taint)."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, listed, na, ok
from exporter.audit.model import Surroundings
from exporter.audit.placement import gpu_nodes_for


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    if around.nodes is None:
        return na("nodes are not visible (manifests): see no-gpu-toleration")
    if not subject.workload.pod.gpus:
        return na("requests no GPU")
    nodes = gpu_nodes_for(subject.workload, around)
    if not nodes:
        return na("no GPU node it can run on")
    open_nodes = sorted(n.name for n in nodes if not n.schedulable_taints())
    if open_nodes:
        return fail(f"GPU node(s) without a NoSchedule taint: {listed(open_nodes)}")
    return ok(f"{len(nodes)} GPU node(s), all tainted")


CHECK = Check(
    id="gpu-nodes-untainted",
    severity="warning",
    reason="Taint GPU nodes so ordinary workloads cannot land there: a logging sidecar must never be why a "
    "model replica cannot be scheduled.",
    fix="Taint the GPU nodes (e.g. nvidia.com/gpu=present:NoSchedule, or through the node pool) and give the "
    "engine pods the matching toleration.",
    reads=("Node", "Pod"),
    evaluate=evaluate,
    engine_agnostic=True,
)
