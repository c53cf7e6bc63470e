"""Why a GPU pod is Pending.

For each resource a pod asks for, its *eligible* nodes are the nodes that offer the resource and that
its nodeSelector, required node affinity and tolerations allow, as the scheduler filters them: a cordoned
or NotReady node only for a pod that tolerates the unschedulable or not-ready taint (`admits`). Its
*candidates* are the eligible nodes where it could run once GPUs were free there: the scheduler's other
filters that come before the GPUs pass (`placement.py`: non-GPU resources, topology spread, pod affinity
and anti-affinity). With F = free counts on the candidates:

- `quota` / `gated`: held by `schedulingGates` (Kueue's `kueue.x-k8s.io/admission`: waiting for quota;
  any other gate: `gated`); the scheduler does not look at the pod yet;
- `constrained`: no eligible node at all;
- `other_resources`, `topology_spread`, `pod_affinity`: eligible nodes exist but none is a candidate;
  the filter named is the one that keeps the pod off most eligible nodes (each node counted under the
  first filter it fails, in the scheduler's order; ties: the earlier filter). Free GPUs do not help;
- `fragmented`: Σ F suffices but no single candidate does: Pending *with free GPUs* (free 2/2/1/1, asks 4);
- `insufficient`: not even Σ F suffices;
- `fits`: a candidate has room now, but the pod uses what these filters do not evaluate (host ports,
  PersistentVolumeClaims) or another of its resources does not fit: that is what it waits on;
- `backoff`: a candidate has room for everything the pod asks and nothing evaluated blocks: the
  scheduler has not retried it since room appeared (its backoff or unschedulable-queue interval).

DRA requests are taken from the pod's unallocated claims, each counted under the resource its device
class stands for (`deviceclass.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from exporter.kube.capacity import Usage
from exporter.kube.eligibility import admits
from exporter.kube.placement import FILTERS, AffinityState, PodIndex, SpreadState, first_failing_filter
from exporter.kube.records import ClaimRecord, NodeRecord, PodRecord

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


def blocking_filter(failures: list[str]) -> str:
    """The filter that keeps the pod off most eligible nodes; ties go to the scheduler's earlier filter."""
    counted = {f: failures.count(f) for f in FILTERS}
    return max(FILTERS, key=lambda f: (counted[f], -FILTERS.index(f)))


class _Placer:
    """Per shape of pending pod (constraints, traits, namespace), the candidates' free counts per resource."""

    def __init__(self, nodes: Mapping[str, NodeRecord], pods: Iterable[PodRecord], usage: Iterable[Usage]) -> None:
        self.offering: dict[str, list[tuple[NodeRecord, int]]] = {}
        for u in usage:
            if u.allocatable > 0:
                self.offering.setdefault(u.resource, []).append((nodes[u.node], u.free))
        self.index = PodIndex(nodes, pods)
        self._verdicts: dict[tuple[int, int, str, str], tuple[str | None, list[int]]] = {}
        self._keep_alive: list[object] = []  # ids stay unique while the shapes live

    def verdict(self, pod: PodRecord, resource: str) -> tuple[str | None, list[int]]:
        """(the blocking filter, or None with the free counts of the candidates)."""
        shape = (id(pod.constraints), id(pod.traits), pod.namespace, resource)
        found = self._verdicts.get(shape)
        if found is None:
            self._keep_alive += (pod.constraints, pod.traits)
            found = self._verdicts[shape] = self._evaluate(pod, resource)
        return found

    def _evaluate(self, pod: PodRecord, resource: str) -> tuple[str | None, list[int]]:
        eligible = [(node, f) for node, f in self.offering.get(resource, ()) if admits(node, pod.constraints)]
        if not eligible:
            return "constrained", []
        spread = SpreadState(self.index, pod) if pod.traits.spread else None
        affinity = AffinityState(self.index, pod)
        failures: list[str] = []
        free: list[int] = []
        for node, f in eligible:
            failing = first_failing_filter(self.index, node, pod, spread, affinity if affinity.needed else None)
            if failing is None:
                free.append(f)
            else:
                failures.append(failing)
        if not free:
            return blocking_filter(failures), []
        return None, free


def pending_pods(
    nodes: Mapping[str, NodeRecord],
    pods: Collection[PodRecord],
    usage: Iterable[Usage],
    claims: Mapping[str, ClaimRecord] | None = None,
    class_to_resource: Callable[[str], str | None] = str,
) -> list[PendingPod]:
    """Every unschedulable or gated GPU pod with its reason, sorted by reason, namespace, pod and resource."""
    placer: _Placer | None = None
    out: list[PendingPod] = []
    for pod in pods:
        gated = pod.held_by_gates
        if not (gated or pod.waiting_for_placement) or not pod.wants_gpus:
            continue
        wanted = sorted((r, c) for r, c in demands(pod, claims or {}, class_to_resource).items() if c > 0)
        if gated:
            out.extend(PendingPod(pod.namespace, pod.name, r, c, gate_reason(pod)) for r, c in wanted)
            continue
        if placer is None:  # built once, only when some pod waits
            placer = _Placer(nodes, pods, usage)
        verdicts = []
        for resource, count in wanted:
            blocking, free = placer.verdict(pod, resource)
            verdicts.append((resource, count, blocking or classify(count, free)))
        # room for every resource and nothing evaluated blocks: only the scheduler's retry is missing
        ready = all(reason == "fits" for _, _, reason in verdicts) and not pod.traits.unmodeled
        for resource, count, reason in verdicts:
            out.append(PendingPod(pod.namespace, pod.name, resource, count, "backoff" if ready else reason))
    order = {reason: i for i, reason in enumerate(REASONS)}
    out.sort(key=lambda p: (order[p.reason], p.namespace, p.pod, p.resource))
    return out
