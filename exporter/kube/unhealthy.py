"""GPUs a node has and does not offer (pure): capacity − allocatable per node and GPU resource.

The NVIDIA device plugin reports a GPU it finds unhealthy (an XID it treats as fatal, a failed health
check) as such to the kubelet, which keeps it in `status.capacity` and drops it from `status.allocatable`.
Without this count a node silently has fewer GPUs: the free and fragmentation figures are right, the cause
invisible. A reservation (`--system-reserved` of a GPU resource) would show here too; nobody reserves GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from exporter.kube.records import NodeRecord


@dataclass(frozen=True, slots=True)
class Unhealthy:
    node: str
    resource: str
    count: int


def unhealthy_devices(nodes: Iterable[NodeRecord]) -> list[Unhealthy]:
    """One entry per node and GPU resource in its capacity, sorted; 0 where every device is offered."""
    out = []
    for node in nodes:
        allocatable = dict(node.allocatable)
        for resource, capacity in node.capacity:
            out.append(Unhealthy(node.name, resource, max(0, capacity - allocatable.get(resource, 0))))
    return sorted(out, key=lambda u: (u.node, u.resource))
