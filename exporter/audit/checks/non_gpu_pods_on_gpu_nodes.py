"""non-gpu-pods-on-gpu-nodes: pods that want no GPU occupy the GPU nodes an engine runs on."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, listed, na, ok
from exporter.audit.model import Surroundings
from exporter.audit.placement import gpu_nodes_for

# Every node runs these by design (device plugins, log shippers, node exporters): a taint does not keep
# them off, and they are not what blocks a replica
_PER_NODE_OWNERS = ("DaemonSet", "Node")


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    if around.nodes is None or around.pods is None:
        return na("nodes and pods are not visible (manifests)")
    if not subject.workload.pod.gpus:
        return na("requests no GPU")
    nodes = {n.name for n in gpu_nodes_for(subject.workload, around)}
    if not nodes:
        return na("no GPU node it can run on")
    squatters = sorted(
        f"{p.namespace}/{p.name} on {p.node}"
        for p in around.pods
        if p.node in nodes and not p.requests_gpu and p.owner_kind not in _PER_NODE_OWNERS
    )
    if squatters:
        return fail(f"{len(squatters)} pod(s) without a GPU request: {listed(squatters)}")
    return ok(f"only GPU pods (and per-node daemons) on its {len(nodes)} GPU node(s)")


CHECK = Check(
    id="non-gpu-pods-on-gpu-nodes",
    severity="warning",
    reason="Pods that need no GPU take CPU and memory on the GPU nodes, so a model replica that fits the "
    "GPUs stays Pending behind them.",
    fix="Taint the GPU nodes (NoSchedule; NoExecute to evict what is there) and move the listed pods off "
    "them; only the engines should tolerate the taint.",
    reads=("Node", "Pod"),
    evaluate=evaluate,
    engine_agnostic=True,
)
