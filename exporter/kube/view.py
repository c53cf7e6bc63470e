"""One computation of the cluster view from the reflectors' records."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from exporter.kube.capacity import Usage, cluster_free, node_usage
from exporter.kube.deviceclass import DeviceClassRecord, resource_of
from exporter.kube.dra import dra_capacity
from exporter.kube.pending import PendingPod, pending_pods
from exporter.kube.placement import PodIndexCache
from exporter.kube.records import ClaimRecord, NodeRecord, PodRecord, SliceRecord
from exporter.kube.unhealthy import Unhealthy, unhealthy_devices


@dataclass(frozen=True)
class ClusterView:
    usage: list[Usage]  # per (node, resource), sorted
    schedulable: dict[str, bool]  # nodes that offer or hold a GPU resource
    free: dict[str, tuple[int, int]]  # resource → (free on schedulable nodes, largest free block)
    pending: list[PendingPod]  # sorted by reason, namespace, pod, resource
    unhealthy: list[Unhealthy] = field(default_factory=list)  # capacity − allocatable, per node and resource


def compute(
    nodes: Mapping[str, NodeRecord],
    pods: Mapping[str, PodRecord],
    slices: Mapping[str, SliceRecord] | None = None,
    claims: Mapping[str, ClaimRecord] | None = None,
    class_to_resource: Callable[[str], str | None] | None = None,
    classes: Mapping[str, DeviceClassRecord] | None = None,
    index_cache: PodIndexCache | None = None,
) -> ClusterView:
    """`nodes` keyed by name, the others by reflector key ("namespace/name" for pods and claims).

    A claim's device class is counted under `class_to_resource(name)`, by default the resource its
    DeviceClass in `classes` stands for (None: a class whose selectors are not understood). `index_cache`
    (one per collector) carries the bound pods' index from one view to the next."""
    known = classes or {}
    to_resource = class_to_resource or (lambda name: resource_of(name, known))
    dra = dra_capacity((slices or {}).values(), (claims or {}).values(), known)
    usage = node_usage(nodes, pods.values(), dra)
    schedulable = {u.node: nodes[u.node].schedulable for u in usage}
    return ClusterView(
        usage=usage,
        schedulable=schedulable,
        free=cluster_free(usage, nodes),
        pending=pending_pods(
            nodes,
            pods.values(),
            usage,
            claims,
            to_resource,
            (lambda: index_cache.index(nodes, pods)) if index_cache is not None else None,
        ),
        unhealthy=unhealthy_devices(nodes.values()),
    )
