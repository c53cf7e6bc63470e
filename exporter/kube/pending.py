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
from exporter.kube.placement import FILTERS, AffinityState, PodIndex, SpreadState, fits_other_resources
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
    """The reason for a request of `requested` given the free counts of its candidate nodes."""
    if not free:
        return "constrained"
    return classify_totals(requested, sum(free), max(free))


def classify_totals(requested: int, total: int, largest: int) -> str:
    """The same from Σ free and the largest free count of one candidate (there is at least one)."""
    if largest >= requested:
        return "fits"
    if total >= requested:
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


def blocking_filter(failures: Mapping[str, int]) -> str:
    """The filter that keeps the pod off most eligible nodes (`failures`: filter → nodes it keeps the pod
    off, each node counted under its first failing filter); ties go to the scheduler's earlier filter."""
    return max(FILTERS, key=lambda f: (failures.get(f, 0), -FILTERS.index(f)))


@dataclass(slots=True)
class _Passing:
    """The eligible nodes of one (constraints, resource) where the pod's non-GPU requests fit too."""

    eligible: int  # how many eligible nodes there are, passing or not
    free: dict[str, int]  # node → free count of the resource, the passing nodes only
    ordered: list[tuple[int, str]]  # (free, node), largest first
    total: int


class _Placer:
    """The verdicts for the pending pods of one view; every piece cached per shape it depends on.

    Eligible nodes per (constraints, resource); those where the non-GPU requests fit per (constraints,
    resource, requests); the nodes topology spread and pod affinity exclude per (constraints, traits,
    namespace), as sets from the index's topology domains. A verdict then costs the excluded nodes, not
    every node: O(pending shapes × nodes) never happens for pods whose rules touch few domains."""

    def __init__(self, nodes: Mapping[str, NodeRecord], index: PodIndex, usage: Iterable[Usage]) -> None:
        self.offering: dict[str, list[tuple[NodeRecord, int]]] = {}
        for u in usage:
            if u.allocatable > 0:
                self.offering.setdefault(u.resource, []).append((nodes[u.node], u.free))
        self.index = index
        self._passing: dict[tuple[int, str, tuple[tuple[str, int], ...]], _Passing] = {}
        self._excluded: dict[tuple[int, int, str], tuple[set[str], set[str]]] = {}
        self._verdicts: dict[tuple[int, int, str, str], tuple[str | None, int, int]] = {}
        self._keep_alive: list[object] = []  # ids stay unique while the shapes live

    def verdict(self, pod: PodRecord, resource: str) -> tuple[str | None, int, int]:
        """(the blocking filter or None, Σ free on the candidates, the largest free count on one)."""
        shape = (id(pod.constraints), id(pod.traits), pod.namespace, resource)
        found = self._verdicts.get(shape)
        if found is None:
            self._keep_alive += (pod.constraints, pod.traits)
            found = self._verdicts[shape] = self._evaluate(pod, resource)
        return found

    def _passing_nodes(self, pod: PodRecord, resource: str) -> _Passing:
        key = (id(pod.constraints), resource, pod.traits.other)
        found = self._passing.get(key)
        if found is None:
            eligible = [(node, f) for node, f in self.offering.get(resource, ()) if admits(node, pod.constraints)]
            other = pod.traits.other
            free = {node.name: f for node, f in eligible if fits_other_resources(self.index, node, other)}
            ordered = sorted(((f, n) for n, f in free.items()), reverse=True)
            found = self._passing[key] = _Passing(len(eligible), free, ordered, sum(free.values()))
        return found

    def _exclusions(self, pod: PodRecord) -> tuple[set[str], set[str]]:
        key = (id(pod.constraints), id(pod.traits), pod.namespace)
        found = self._excluded.get(key)
        if found is None:
            spread = SpreadState(self.index, pod).excluded() if pod.traits.spread else set()
            found = self._excluded[key] = (spread, AffinityState(self.index, pod).excluded())
        return found

    def _evaluate(self, pod: PodRecord, resource: str) -> tuple[str | None, int, int]:
        passing = self._passing_nodes(pod, resource)
        if not passing.eligible:
            return "constrained", 0, 0
        spread, affinity = self._exclusions(pod)
        free = passing.free
        spread_hit = _among(spread, free)
        affinity_hit = _among(affinity, free) - spread_hit  # each node under its first failing filter
        if len(spread_hit) + len(affinity_hit) == len(free):
            failures = {
                "other_resources": passing.eligible - len(free),
                "topology_spread": len(spread_hit),
                "pod_affinity": len(affinity_hit),
            }
            return blocking_filter(failures), 0, 0
        removed = spread_hit | affinity_hit
        total = passing.total - sum(free[n] for n in removed)
        largest = next(f for f, n in passing.ordered if n not in removed)
        return None, total, largest


def _among(names: set[str], within: Mapping[str, int]) -> set[str]:
    """`names` ∩ the keys of `within`, iterating the smaller side."""
    if len(names) <= len(within):
        return {n for n in names if n in within}
    return {n for n in within if n in names}


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
    placer: _Placer | None = None
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
            placer = _Placer(nodes, index_of() if index_of else PodIndex(nodes, pods), usage)
        verdicts = []
        for resource, count in wanted:
            blocking, total, largest = placer.verdict(pod, resource)
            verdicts.append((resource, count, blocking or classify_totals(count, total, largest)))
        # room for every resource and nothing evaluated blocks: only the scheduler's retry is missing
        ready = all(reason == "fits" for _, _, reason in verdicts) and not pod.traits.unmodeled
        for resource, count, reason in verdicts:
            out.append(PendingPod(pod.namespace, pod.name, resource, count, "backoff" if ready else reason))
    order = {reason: i for i, reason in enumerate(REASONS)}
    out.sort(key=lambda p: (order[p.reason], p.namespace, p.pod, p.resource))
    return out
