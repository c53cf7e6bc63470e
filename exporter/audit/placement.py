"""Which nodes an engine workload's pods can land on, and which are GPU nodes (pure; for the GPU checks)."""

from __future__ import annotations

from exporter.audit.model import Node, PodTemplate, Surroundings, Workload

TIME_SLICING_LABEL = "nvidia.com/gpu.sharing-strategy"  # GPU feature discovery: none | time-slicing | mps
REPLICAS_LABEL = "nvidia.com/gpu.replicas"  # GPU feature discovery: shares per GPU (1: not shared)


def selects(template: PodTemplate, n: Node) -> bool:
    """True when `n` satisfies the template's nodeSelector and required node affinity (taints aside)."""
    if any(n.labels.get(k) != v for k, v in template.node_selector.items()):
        return False
    return all(
        k in n.labels and (not values or n.labels[k] in values) for k, values in template.node_affinity_labels.items()
    )


def gpu_nodes_for(w: Workload, around: Surroundings) -> list[Node]:
    """The GPU nodes `w`'s pods run on (live) or, with none running, those its selectors allow."""
    nodes = [n for n in around.nodes or () if n.has_gpus]
    running = {p.node for p in around.pods or () if p.namespace == w.namespace and _owned(w, p.labels)}
    on = [n for n in nodes if n.name in running]
    return on or [n for n in nodes if selects(w.pod, n)]


def _owned(w: Workload, labels: dict[str, str]) -> bool:
    return bool(w.pod_labels) and all(labels.get(k) == v for k, v in w.pod_labels.items())


def time_sliced(n: Node) -> bool:
    replicas = n.labels.get(REPLICAS_LABEL, "1")
    return n.labels.get(TIME_SLICING_LABEL) == "time-slicing" or (replicas.isdigit() and int(replicas) > 1)
