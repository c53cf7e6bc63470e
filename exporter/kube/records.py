"""Compact per-object records: what the cluster computation needs of each node, pod, slice and claim.

The reflectors keep these instead of whole objects (150,000 pods must fit in little memory): `__slots__`
classes, node names and label keys interned, and the scheduling constraints of a pod interned so that
the replicas of one workload share a single `Constraints` object.
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from exporter.kube.cel import Device

T = TypeVar("T")
Pair = tuple[str, int]  # (resource name, count)

# A toleration: (key, operator, value, effect); an empty key with Exists tolerates every taint.
Toleration = tuple[str, str, str, str]
Taint = tuple[str, str, str]  # (key, value, effect), NoSchedule/NoExecute only
# A required node affinity requirement: (key, operator, values); `field` terms use key "metadata.name".
Requirement = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One nodeSelectorTerm: all its requirements must hold (terms of a pod are ORed)."""

    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Constraints:
    """Where a pod may go: nodeSelector, required node affinity (None: no requirement), tolerations."""

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[AffinityTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()


class Interner(Generic[T]):
    """Equal frozen values shared as one object (the replicas of a workload hold one), the empty value as
    itself; weakly held, so a shape no pod has any more is freed."""

    def __init__(self, empty: T) -> None:
        self.empty = empty
        self._shared: weakref.WeakValueDictionary[T, T] = weakref.WeakValueDictionary()

    def __call__(self, value: T) -> T:
        if value == self.empty:
            return self.empty
        shared = self._shared.get(value)
        if shared is None:
            self._shared[value] = shared = value
        return shared


NO_CONSTRAINTS = Constraints()
intern_constraints = Interner(NO_CONSTRAINTS)


@dataclass(frozen=True, slots=True)
class Selector:
    """A metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist), ANDed."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A required pod (anti-)affinity term. `selector` None: the term selects no pod (labelSelector unset).

    Namespaces: `namespaces`, plus those `namespace_selector` selects (by the `kubernetes.io/metadata.name`
    label, the only namespace label the view knows); neither set: the pod's own namespace.
    `understood` is False for a namespaceSelector on other labels: such a term is not evaluated."""

    topology_key: str
    selector: Selector | None
    namespaces: tuple[str, ...] = ()
    namespace_selector: Selector | None = None
    understood: bool = True


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A topologySpreadConstraint with whenUnsatisfiable DoNotSchedule (ScheduleAnyway only scores)."""

    max_skew: int
    topology_key: str
    selector: Selector | None
    min_domains: int = 1
    match_label_keys: tuple[str, ...] = ()
    honor_node_affinity: bool = True  # nodeAffinityPolicy, default Honor
    honor_node_taints: bool = False  # nodeTaintsPolicy, default Ignore


@dataclass(frozen=True, slots=True, weakref_slot=True)
class PodTraits:
    """What the pre-resource filters need of a pod, shared by the replicas of a workload (interned).

    `other`: the effective requests of non-GPU resources (cpu in millicores, bytes, counts); `gates`: its
    schedulingGates; `unmodeled`: it uses something whose filters the view does not evaluate (host ports,
    PersistentVolumeClaims), so a pod that passes every evaluated filter may still be blocked."""

    labels: tuple[tuple[str, str], ...] = ()
    other: tuple[Pair, ...] = ()
    affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    gates: tuple[str, ...] = ()
    unmodeled: bool = False


NO_TRAITS = PodTraits()
intern_traits = Interner(NO_TRAITS)


def intern(text: str) -> str:
    return sys.intern(text)


class NodeRecord:
    __slots__ = ("allocatable", "capacity", "cordoned", "labels", "name", "ready", "resources", "taints")

    def __init__(
        self,
        name: str,
        *,
        ready: bool = True,
        cordoned: bool = False,
        labels: dict[str, str] | None = None,
        taints: tuple[Taint, ...] = (),
        allocatable: tuple[Pair, ...] = (),
        capacity: tuple[Pair, ...] = (),
        resources: tuple[Pair, ...] = (),
    ) -> None:
        self.name = name
        self.ready = ready
        self.cordoned = cordoned
        self.labels = labels or {}
        self.taints = taints
        self.allocatable = allocatable  # GPU resources only
        self.capacity = capacity  # GPU resources only: above allocatable by the devices a plugin marked unhealthy
        self.resources = resources  # the other allocatable resources (cpu in millicores), as `amount` reads them

    @property
    def schedulable(self) -> bool:
        """DESIGN: Ready and not cordoned."""
        return self.ready and not self.cordoned

    def __repr__(self) -> str:
        return f"NodeRecord({self.name!r}, ready={self.ready}, cordoned={self.cordoned}, {self.allocatable})"


class PodRecord:
    __slots__ = (
        "claims",
        "constraints",
        "gated",
        "name",
        "namespace",
        "node",
        "phase",
        "requests",
        "terminating",
        "traits",
        "unschedulable",
    )

    def __init__(
        self,
        namespace: str,
        name: str,
        *,
        node: str = "",
        phase: str = "Pending",
        requests: tuple[Pair, ...] = (),
        unschedulable: bool = False,
        gated: bool = False,
        constraints: Constraints = NO_CONSTRAINTS,
        claims: tuple[str, ...] = (),
        traits: PodTraits = NO_TRAITS,
        terminating: bool = False,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.node = node  # "" while unbound
        self.phase = phase
        self.requests = requests  # effective GPU requests (scheduler rule), device-plugin resources
        self.unschedulable = unschedulable  # PodScheduled=False, reason Unschedulable
        self.gated = gated  # schedulingGates present: not a capacity question
        self.constraints = constraints
        self.claims = claims  # ResourceClaim names in the pod's namespace (DRA)
        self.traits = traits  # labels, non-GPU requests, pod (anti-)affinity, spread constraints
        self.terminating = terminating  # deletionTimestamp set: still holds resources, not counted for spread

    @property
    def wants_gpus(self) -> bool:
        return bool(self.requests or self.claims)

    @property
    def holds_resources(self) -> bool:
        """Bound and not finished: its requests count against the node (Terminating pods still hold)."""
        return bool(self.node) and self.phase not in ("Succeeded", "Failed")

    @property
    def waiting_for_placement(self) -> bool:
        """An unschedulable pod the scheduler gave up on for now, not held back by scheduling gates."""
        return not self.node and self.phase == "Pending" and self.unschedulable and not self.gated

    @property
    def held_by_gates(self) -> bool:
        """An unbound pod the scheduler does not look at yet: its schedulingGates are not all removed."""
        return not self.node and self.phase == "Pending" and self.gated

    def __repr__(self) -> str:
        return f"PodRecord({self.namespace}/{self.name}, node={self.node!r}, {self.phase}, {self.requests})"


class DeviceRecord:
    __slots__ = ("counter_sets", "device", "kind", "name")

    def __init__(
        self, name: str, kind: str = "", counter_sets: tuple[str, ...] = (), device: Device | None = None
    ) -> None:
        self.name = name
        self.kind = kind  # the `type` attribute (NVIDIA: gpu, mig, vfio), "" when the driver sets none
        self.counter_sets = counter_sets  # shared counter sets it consumes (partitionable devices)
        self.device = device or Device("", {}, {})  # what DeviceClass selectors see (attributes, capacity)


class SliceRecord:
    __slots__ = ("devices", "driver", "generation", "matched", "node", "pool", "slice_count")

    def __init__(
        self,
        driver: str,
        pool: str,
        *,
        node: str,
        generation: int = 0,
        slice_count: int = 1,
        devices: tuple[DeviceRecord, ...] = (),
    ) -> None:
        self.driver = driver
        self.pool = pool
        self.node = node
        self.generation = generation
        self.slice_count = slice_count
        self.devices = devices
        # the resources of each device for one set of device classes: (their identity, per device), cached
        # because the selectors are evaluated again only when the slice or the classes change
        self.matched: tuple[Any, list[tuple[str, ...]]] | None = None


class ClaimRecord:
    __slots__ = ("allocated", "name", "namespace", "requests")

    def __init__(
        self,
        namespace: str,
        name: str,
        *,
        requests: tuple[Pair, ...] = (),
        allocated: tuple[tuple[str, str, str], ...] = (),
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.requests = requests  # (device class, count) of ExactCount requests
        self.allocated = allocated  # (driver, pool, device) results that consume a device
