"""Which nodes an engine workload's pods can land on, and which are GPU nodes (pure; for the GPU checks)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from exporter.audit.model import Surroundings
from exporter.audit.nodes import Node
from exporter.k8s import scheduling
from exporter.k8s.scheduling import Constraints
from exporter.k8s.workloads import Workload

TIME_SLICING_LABEL = "nvidia.com/gpu.sharing-strategy"  # GPU feature discovery: none | time-slicing | mps
REPLICAS_LABEL = "nvidia.com/gpu.replicas"  # GPU feature discovery: shares per GPU (1: not shared)


def gpu_nodes_for(w: Workload, around: Surroundings) -> list[Node]:
    """The GPU nodes `w`'s pods run on (live) or, with none running, those the scheduler may place them on
    (nodeSelector, required node affinity, taints and tolerations)."""
    nodes = [n for n in around.nodes or () if n.has_gpus]
    running = {p.node for p in around.pods or () if p.namespace == w.namespace and _owned(w, p.labels)}
    on = [n for n in nodes if n.name in running]
    admitted = as_admitted(w.pod.constraints, w.pod.gpus)
    return on or [n for n in nodes if scheduling.allows(admitted, n.name, n.labels, n.taints)]


def as_admitted(c: Constraints, resources: Iterable[str]) -> Constraints:
    """A template's constraints as its pods have them: the ExtendedResourceToleration admission plugin (on by
    default on GKE, whose GPU nodes are tainted nvidia.com/gpu) adds a toleration for each extended resource a
    pod requests, which the template does not show."""
    implied = tuple((r, "Exists", "", "NoSchedule") for r in sorted(resources))
    return replace(c, tolerations=c.tolerations + implied)


def _owned(w: Workload, labels: dict[str, str]) -> bool:
    return bool(w.pod_labels) and all(labels.get(k) == v for k, v in w.pod_labels.items())


def time_sliced(n: Node) -> bool:
    replicas = n.labels.get(REPLICAS_LABEL, "1")
    return n.labels.get(TIME_SLICING_LABEL) == "time-slicing" or (replicas.isdigit() and int(replicas) > 1)
