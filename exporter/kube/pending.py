"""Why a GPU pod is Pending: the pods the scheduler gave up on or that gates hold, each with its reason.

- `quota` / `gated`: held by `schedulingGates` (Kueue's `kueue.x-k8s.io/admission`: waiting for quota;
  any other gate: `gated`); the scheduler does not look at the pod yet;
- the others per resource the pod asks for, from the room its eligible nodes offer (`room.py`):
  `constrained`, `fragmented`, `other_resources`, `topology_spread`, `pod_affinity`, `insufficient`, and
  `fits` (a candidate has room now, but the pod uses what the filters here do not evaluate, host ports or
  PersistentVolumeClaims, or another of its resources does not fit: that is what it waits on);
- `backoff`: a candidate has room for everything the pod asks and nothing evaluated blocks: the
  scheduler has not retried it since room appeared (its backoff or unschedulable-queue interval).

DRA requests are taken from the pod's unallocated claims, each counted under the resource its device
class stands for (`deviceclass.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from exporter.kube.capacity import Usage
from exporter.kube.placement import PodIndex
from exporter.kube.records import ClaimRecord, NodeRecord, PodRecord
from exporter.kube.room import Placer, classify

# also the order kept when truncating: the actionable reasons first
REASONS = (
    "fragmented",
    "insufficient",
    "constrained",
    "other_resources",
    "pod_affinity",
    "topology_spread",
    "fits",
    "quota",
    "gated",
    "backoff",
)
KUEUE_ADMISSION_GATE = "kueue.x-k8s.io/admission"


@dataclass(frozen=True, slots=True)
class PendingPod:
    namespace: str
    pod: str
    resource: str
    requested: int
    reason: str


def demands(
    pod: PodRecord, claims: Mapping[str, ClaimRecord], class_to_resource: Callable[[str], str | None]
) -> dict[str, int]:
    """resource → count the pod asks for: device-plugin requests plus its unallocated DRA claims (a device
    class whose selectors are not understood, `class_to_resource` None, is left out: never guessed)."""
    out = dict(pod.requests)
    for name in pod.claims:
        claim = claims.get(f"{pod.namespace}/{name}")
        if claim is None or claim.allocated:
            continue
        for device_class, count in claim.requests:
            resource = class_to_resource(device_class)
            if resource is not None:
                out[resource] = out.get(resource, 0) + count
    return out


def gate_reason(pod: PodRecord) -> str:
    return "quota" if KUEUE_ADMISSION_GATE in pod.traits.gates else "gated"


def pending_pods(
    nodes: Mapping[str, NodeRecord],
    pods: Collection[PodRecord],
    usage: Iterable[Usage],
    claims: Mapping[str, ClaimRecord] | None = None,
    class_to_resource: Callable[[str], str | None] = str,
    index_of: Callable[[], PodIndex] | None = None,
) -> list[PendingPod]:
    """Every unschedulable or gated GPU pod with its reason, sorted by reason, namespace, pod and resource.

    `index_of()` gives the bound pods' index (`PodIndexCache.index`), asked only when some pod waits;
    by default one is built from `pods`."""
    placer: Placer | None = None
    out: list[PendingPod] = []
    for pod in pods:
        if pod.node:
            continue  # bound: most pods, so the cheapest test first
        gated = pod.held_by_gates
        if not (gated or pod.waiting_for_placement) or not pod.wants_gpus:
            continue
        wanted = sorted((r, c) for r, c in demands(pod, claims or {}, class_to_resource).items() if c > 0)
        if gated:
            out.extend(PendingPod(pod.namespace, pod.name, r, c, gate_reason(pod)) for r, c in wanted)
            continue
        if placer is None:  # built once, only when some pod waits
            placer = Placer(nodes, index_of() if index_of else PodIndex(nodes, pods), usage)
        verdicts = [(resource, count, classify(count, placer.room(pod, resource))) for resource, count in wanted]
        # room for every resource and nothing evaluated blocks: only the scheduler's retry is missing
        ready = all(reason == "fits" for _, _, reason in verdicts) and not pod.traits.unmodeled
        for resource, count, reason in verdicts:
            out.append(PendingPod(pod.namespace, pod.name, resource, count, "backoff" if ready else reason))
    order = {reason: i for i, reason in enumerate(REASONS)}
    out.sort(key=lambda p: (order[p.reason], p.namespace, p.pod, p.resource))
    return out
