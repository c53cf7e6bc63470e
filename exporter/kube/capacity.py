"""Allocatable, allocated and free per node and resource.

Allocated = the effective requests of the pods bound to the node that have not finished (Running,
Pending-but-bound, Unknown, Terminating all hold their devices). Free = max(0, allocatable − allocated):
allocated can exceed allocatable for a moment when a device plugin restarts and re-registers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from exporter.kube.records import NodeRecord, PodRecord


@dataclass(frozen=True, slots=True)
class Usage:
    node: str
    resource: str
    allocatable: int
    allocated: int

    @property
    def free(self) -> int:
        return max(0, self.allocatable - self.allocated)


def node_usage(
    nodes: Mapping[str, NodeRecord],
    pods: Iterable[PodRecord],
    dra: Mapping[tuple[str, str], list[int]] | None = None,
) -> list[Usage]:
    """One `Usage` per (node, resource) the node offers or its pods hold, sorted by node and resource."""
    totals: dict[tuple[str, str], list[int]] = {}
    for node in nodes.values():
        for resource, count in node.allocatable:
            totals[(node.name, resource)] = [count, 0]
    for pod in pods:
        if not pod.requests or not pod.holds_resources or pod.node not in nodes:
            continue
        for resource, count in pod.requests:
            entry = totals.get((pod.node, resource))
            if entry is None:
                totals[(pod.node, resource)] = entry = [0, 0]
            entry[1] += count
    for (node_name, driver), (devices, busy) in (dra or {}).items():
        if node_name in nodes:
            totals[(node_name, driver)] = [devices, busy]
    return [Usage(n, r, a, u) for (n, r), (a, u) in sorted(totals.items())]


def cluster_free(usage: Iterable[Usage], nodes: Mapping[str, NodeRecord]) -> dict[str, tuple[int, int]]:
    """resource → (free summed over schedulable nodes, largest free count on one schedulable node)."""
    out: dict[str, tuple[int, int]] = {}
    for u in usage:
        total, largest = out.get(u.resource, (0, 0))
        if nodes[u.node].schedulable:
            total, largest = total + u.free, max(largest, u.free)
        out[u.resource] = (total, largest)
    return out
