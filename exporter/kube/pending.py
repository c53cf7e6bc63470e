"""Why an unschedulable GPU pod is Pending.

For each resource a pod asks for, its *eligible* nodes are the nodes that offer the resource and that
its nodeSelector, required node affinity and tolerations allow, as the scheduler filters them: a cordoned
or NotReady node only for a pod that tolerates the unschedulable or not-ready taint (`admits`).
With F = free counts there:

- `constrained`: no eligible node at all;
- `fits`: one eligible node has room now: the pod waits on something else (cpu, memory, backoff);
- `fragmented`: Σ F suffices but no single node does: Pending *with free GPUs* (free 2/2/1/1, asks 4);
- `insufficient`: not even Σ F suffices.

Pods held by `schedulingGates` are not classified; DRA requests are taken from the pod's unallocated
claims, each device class counted under the driver its selectors require (`deviceclass.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from exporter.kube.capacity import Usage
from exporter.kube.eligibility import admits
from exporter.kube.records import ClaimRecord, Constraints, NodeRecord, PodRecord

REASONS = ("fragmented", "insufficient", "constrained", "fits")  # also the order kept when truncating


@dataclass(frozen=True, slots=True)
class PendingPod:
    namespace: str
    pod: str
    resource: str
    requested: int
    reason: str


def classify(requested: int, free: list[int]) -> str:
    """The reason for a request of `requested` given the free counts of its eligible nodes."""
    if not free:
        return "constrained"
    if max(free) >= requested:
        return "fits"
    if sum(free) >= requested:
        return "fragmented"
    return "insufficient"


def demands(
    pod: PodRecord, claims: Mapping[str, ClaimRecord], class_to_resource: Callable[[str], str]
) -> dict[str, int]:
    """resource → count the pod asks for: device-plugin requests plus its unallocated DRA claims."""
    out = dict(pod.requests)
    for name in pod.claims:
        claim = claims.get(f"{pod.namespace}/{name}")
        if claim is None or claim.allocated:
            continue
        for device_class, count in claim.requests:
            resource = class_to_resource(device_class)
            out[resource] = out.get(resource, 0) + count
    return out


def pending_pods(
    nodes: Mapping[str, NodeRecord],
    pods: Iterable[PodRecord],
    usage: Iterable[Usage],
    claims: Mapping[str, ClaimRecord] | None = None,
    class_to_resource: Callable[[str], str] = str,
) -> list[PendingPod]:
    """Every unschedulable GPU pod with its reason, sorted by reason, namespace, pod and resource."""
    offering: dict[str, list[tuple[NodeRecord, int]]] = {}
    for u in usage:
        node = nodes[u.node]
        if u.allocatable > 0:
            offering.setdefault(u.resource, []).append((node, u.free))
    # the replicas of one workload share their Constraints object: evaluate eligibility once per shape
    free_by_shape: dict[tuple[int, str], list[int]] = {}
    keep_alive: list[Constraints] = []  # ids stay unique while the shapes live
    out: list[PendingPod] = []
    for pod in pods:
        if not pod.waiting_for_placement:
            continue
        for resource, count in sorted(demands(pod, claims or {}, class_to_resource).items()):
            if count <= 0:
                continue
            shape = (id(pod.constraints), resource)
            free = free_by_shape.get(shape)
            if free is None:
                keep_alive.append(pod.constraints)
                free = free_by_shape[shape] = [
                    f for node, f in offering.get(resource, ()) if admits(node, pod.constraints)
                ]
            out.append(PendingPod(pod.namespace, pod.name, resource, count, classify(count, free)))
    order = {reason: i for i, reason in enumerate(REASONS)}
    out.sort(key=lambda p: (order[p.reason], p.namespace, p.pod, p.resource))
    return out
