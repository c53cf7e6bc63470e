"""Would moving GPU pods, or freeing what non-GPU pods hold, let a pending pod run? Its reason, per resource.

For one pending pod and one GPU resource, each *eligible* node (it offers the resource; the pod's
nodeSelector, required node affinity and tolerations allow it, `eligibility.admits`) stands as:

- ruled out whatever is moved, under the first of these in the scheduler's order: `other_resources` where
  the pods *without* GPUs bound there leave too little cpu, memory, pod slots or another resource for the
  pod; `topology_spread` or `pod_affinity` where a DoNotSchedule spread constraint or pod (anti-)affinity
  forbids it (`placement.py`);
- a *candidate*: nothing rules it out and the pod's non-GPU requests fit now, beside every pod bound there;
- *movable*: nothing rules it out and they would fit once the GPU pods bound there moved, taking the cpu
  and memory they hold with them (every candidate is movable).

With F the free count of the resource on a node and R the pod's request:

- `constrained`: no eligible node;
- `fits`: a candidate has F ≥ R (the caller turns it into `backoff` when nothing else blocks);
- `fragmented`: Σ F over the movable nodes ≥ R: free GPUs enough, on no single node that can take the
  pod now; moving GPU pods would make room (the 2/2/1/1 case, and GPU pods' cpu and memory in the way);
- `other_resources`, `topology_spread`, `pod_affinity`: Σ F over every eligible node ≥ R, but not over
  the movable ones: GPUs that would suffice are free where that filter holds them back (the filter
  holding back the most free GPUs; ties: the scheduler's earlier filter);
- `insufficient`: not even Σ F over every eligible node reaches R.

`room_of` is this definition node by node; `Placer` reaches the same figures per shape of pending pod
without visiting every node for each shape (the eligible nodes per shape of requests, then only the nodes
spread and affinity rule out).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from exporter.kube.capacity import Usage
from exporter.kube.eligibility import admits
from exporter.kube.placement import FILTERS, AffinityState, PodIndex, SpreadState, fits_other_resources
from exporter.kube.records import NodeRecord, PodRecord


@dataclass(frozen=True, slots=True)
class Standing:
    """One eligible node for one pending pod: its free count of the resource, the filter that rules it out
    whatever is moved (None: none does), and whether the pod's non-GPU requests fit there now."""

    free: int
    ruled_out: str | None = None
    fits_now: bool = True


@dataclass(frozen=True, slots=True)
class Room:
    """What a pending pod finds on its eligible nodes for one resource (free counts)."""

    eligible_nodes: int
    largest_candidate: int  # the largest F on a candidate (0 without one)
    movable: int  # Σ F on the movable nodes
    eligible: int  # Σ F on every eligible node
    held: Mapping[str, int] = field(default_factory=dict)  # filter → Σ F on the nodes it rules out (where positive)


CONSTRAINED = Room(0, 0, 0, 0)


def room_of(nodes: Iterable[Standing]) -> Room:
    """The figures of the module's definition, node by node."""
    count = largest = movable = total = 0
    held: dict[str, int] = {}
    for node in nodes:
        count += 1
        total += node.free
        if node.ruled_out is not None:
            if node.free:
                held[node.ruled_out] = held.get(node.ruled_out, 0) + node.free
            continue
        movable += node.free
        if node.fits_now:
            largest = max(largest, node.free)
    return Room(count, largest, movable, total, held)


def blocking_filter(held: Mapping[str, int]) -> str:
    """The filter that holds back the most (free GPUs on the nodes it rules out); ties go to the scheduler's
    earlier filter."""
    return max(FILTERS, key=lambda f: (held.get(f, 0), -FILTERS.index(f)))


def classify(requested: int, room: Room) -> str:
    """The reason for a request of `requested` GPUs given the `room` its eligible nodes offer."""
    if not room.eligible_nodes:
        return "constrained"
    if room.largest_candidate >= requested:
        return "fits"
    if room.movable >= requested:
        return "fragmented"
    if room.eligible >= requested:
        return blocking_filter(room.held)
    return "insufficient"


@dataclass(slots=True)
class _Nodes:
    """The eligible nodes of one (constraints, resource, non-GPU requests), before spread and affinity."""

    free: dict[str, int]  # node → F, every eligible node
    movable: set[str]  # the pods without GPUs leave room for the requests
    candidates: list[tuple[int, str]]  # (F, node) where the requests fit now, largest F first
    total: int
    movable_total: int
    held_total: int  # Σ F where the pods without GPUs leave no room


class Placer:
    """The `Room` of each pending pod of one view, every piece cached per shape it depends on.

    Eligible nodes per (constraints, resource); where the non-GPU requests fit, now and once GPU pods
    moved, per (constraints, resource, requests); the nodes topology spread and pod affinity exclude per
    (constraints, traits, namespace), as sets from the index's topology domains. A room then costs the
    excluded nodes, not every node: O(pending shapes × nodes) never happens for pods whose rules touch few
    domains."""

    def __init__(self, nodes: Mapping[str, NodeRecord], index: PodIndex, usage: Iterable[Usage]) -> None:
        self.offering: dict[str, list[tuple[NodeRecord, int]]] = {}
        for u in usage:
            if u.allocatable > 0:
                self.offering.setdefault(u.resource, []).append((nodes[u.node], u.free))
        self.index = index
        self._nodes: dict[tuple[int, str, tuple[tuple[str, int], ...]], _Nodes] = {}
        self._excluded: dict[tuple[int, int, str], tuple[set[str], set[str]]] = {}
        self._rooms: dict[tuple[int, int, str, str], Room] = {}
        self._keep_alive: list[object] = []  # ids stay unique while the shapes live

    def room(self, pod: PodRecord, resource: str) -> Room:
        shape = (id(pod.constraints), id(pod.traits), pod.namespace, resource)
        found = self._rooms.get(shape)
        if found is None:
            self._keep_alive += (pod.constraints, pod.traits)
            found = self._rooms[shape] = self._evaluate(pod, resource)
        return found

    def _eligible(self, pod: PodRecord, resource: str) -> _Nodes:
        other = pod.traits.other
        key = (id(pod.constraints), resource, other)
        found = self._nodes.get(key)
        if found is None:
            free: dict[str, int] = {}
            movable: set[str] = set()
            candidates: list[tuple[int, str]] = []
            total = movable_total = held_total = 0
            for node, f in self.offering.get(resource, ()):
                if not admits(node, pod.constraints):
                    continue
                free[node.name] = f
                total += f
                if fits_other_resources(self.index, node, other):
                    candidates.append((f, node.name))
                elif not fits_other_resources(self.index, node, other, gpu_pods=False):
                    held_total += f
                    continue
                movable.add(node.name)
                movable_total += f
            candidates.sort(reverse=True)
            found = self._nodes[key] = _Nodes(free, movable, candidates, total, movable_total, held_total)
        return found

    def _exclusions(self, pod: PodRecord) -> tuple[set[str], set[str]]:
        key = (id(pod.constraints), id(pod.traits), pod.namespace)
        found = self._excluded.get(key)
        if found is None:
            spread = SpreadState(self.index, pod).excluded() if pod.traits.spread else set()
            found = self._excluded[key] = (spread, AffinityState(self.index, pod).excluded())
        return found

    def _evaluate(self, pod: PodRecord, resource: str) -> Room:
        nodes = self._eligible(pod, resource)
        if not nodes.free:
            return CONSTRAINED
        spread, affinity = self._exclusions(pod)
        # each node under its first failing filter; those the pods without GPUs rule out are counted already
        spread_hit = _among(spread, nodes.free)
        affinity_hit = _among(affinity, nodes.free) - spread_hit
        held = {"other_resources": nodes.held_total, "topology_spread": 0, "pod_affinity": 0}
        movable_total = nodes.movable_total
        for name in spread_hit | affinity_hit:
            if name in nodes.movable:
                f = nodes.free[name]
                held["topology_spread" if name in spread_hit else "pod_affinity"] += f
                movable_total -= f
        largest = 0
        if spread_hit or affinity_hit:
            largest = next((f for f, n in nodes.candidates if n not in spread_hit and n not in affinity_hit), 0)
        elif nodes.candidates:
            largest = nodes.candidates[0][0]
        held = {f: gpus for f, gpus in held.items() if gpus}
        return Room(len(nodes.free), largest, movable_total, nodes.total, held)


def _among(names: set[str], within: Mapping[str, int]) -> set[str]:
    """`names` ∩ the keys of `within`, iterating the smaller side."""
    if len(names) <= len(within):
        return {n for n in names if n in within}
    return {n for n in within if n in names}
