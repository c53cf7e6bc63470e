"""The scheduler's filters that come before the GPUs: could the pod run on a node once GPUs were free there?

Three of kube-scheduler's filter plugins, in its order, for an unbound pod and a node it is already
eligible for (`eligibility.admits`):

- `other_resources` (NodeResourcesFit without the GPU resources): every non-GPU request (cpu, memory,
  ephemeral-storage, hugepages, other extended resources) fits in the node's allocatable minus the requests
  of the pods bound there, and one more pod fits in its `pods` allocatable;
- `topology_spread` (PodTopologySpread, `whenUnsatisfiable: DoNotSchedule` only): the node has the
  topology key and placing the pod there keeps `count(domain) + self − global minimum ≤ maxSkew`, counts
  over the pods of the pod's namespace that its selector (plus `matchLabelKeys`) selects, not terminating,
  on the nodes its nodeSelector/required node affinity allow (`nodeAffinityPolicy: Honor`, the default)
  and, with `nodeTaintsPolicy: Honor`, whose taints it tolerates, and that carry every key of its
  constraints; the minimum is 0 while fewer domains than `minDomains` exist;
- `pod_affinity` (InterPodAffinity): no bound pod's required anti-affinity term selects this pod within
  the node's domain, none of the pod's own anti-affinity terms selects a bound pod there, and every
  required affinity term finds a selected pod in the node's domain (or, the first of a series, no pod at
  all matches yet and the pod matches its own terms).

`PodIndex` holds the bound pods by node (and, built on first use, by namespace), so each filter costs the
pods of one node or one namespace, evaluated once per shape of pending pod by the caller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from exporter.kube.eligibility import eligible, requirement_holds, tolerates_all
from exporter.kube.records import (
    NodeRecord,
    PodAffinityTerm,
    PodRecord,
    PodTraits,
    Selector,
    SpreadConstraint,
)

FILTERS = ("other_resources", "topology_spread", "pod_affinity")  # kube-scheduler's order of the plugins
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def selects(selector: Selector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: None selects nothing, an empty selector everything."""
    if selector is None:
        return False
    return all(labels.get(k) == v for k, v in selector.match_labels) and all(
        requirement_holds(r, labels.get(r[0])) for r in selector.expressions
    )


def term_namespaces(term: PodAffinityTerm, own: str, known: Iterable[str]) -> set[str]:
    """The namespaces a pod (anti-)affinity term looks at, for a pod in namespace `own`."""
    chosen = set(term.namespaces)
    if term.namespace_selector is not None:
        chosen.update(n for n in known if selects(term.namespace_selector, {NAMESPACE_NAME_LABEL: n}))
    elif not chosen:
        chosen.add(own)
    return chosen


def term_selects(term: PodAffinityTerm, owner_namespace: str, pod: PodRecord) -> bool:
    """`term` (of a pod in `owner_namespace`) selects `pod`."""
    if pod.namespace in term.namespaces:
        pass
    elif term.namespace_selector is not None:
        if not selects(term.namespace_selector, {NAMESPACE_NAME_LABEL: pod.namespace}):
            return False
    elif term.namespaces or pod.namespace != owner_namespace:
        return False
    return selects(term.selector, dict(pod.traits.labels))


class PodIndex:
    """The bound pods that hold resources, by node; their non-GPU usage per node, computed on demand."""

    def __init__(self, nodes: Mapping[str, NodeRecord], pods: Iterable[PodRecord]) -> None:
        self.nodes = nodes
        self.by_node: dict[str, list[PodRecord]] = {}
        self.anti_affinity: list[PodRecord] = []  # bound pods with required anti-affinity terms
        for pod in pods:
            if not pod.node or not pod.holds_resources or pod.node not in nodes:
                continue
            on_node = self.by_node.get(pod.node)
            if on_node is None:
                self.by_node[pod.node] = on_node = []
            on_node.append(pod)
            if pod.traits.anti_affinity:
                self.anti_affinity.append(pod)
        self._used: dict[str, dict[str, int]] = {}
        self._allocatable: dict[str, dict[str, int]] = {}
        self._by_namespace: dict[str, list[PodRecord]] | None = None

    def by_namespace(self) -> dict[str, list[PodRecord]]:
        if self._by_namespace is None:
            self._by_namespace = {}
            for on_node in self.by_node.values():
                for pod in on_node:
                    self._by_namespace.setdefault(pod.namespace, []).append(pod)
        return self._by_namespace

    def used(self, node: str) -> dict[str, int]:
        """resource → the non-GPU requests of the pods bound to `node`, and `pods` → how many there are."""
        used = self._used.get(node)
        if used is None:
            on_node = self.by_node.get(node, ())
            shapes = Counter(id(p.traits) for p in on_node)  # replicas share their traits: add each shape once
            traits = {id(p.traits): p.traits for p in on_node}
            used = {"pods": len(on_node)}
            for shape, times in shapes.items():
                for resource, count in traits[shape].other:
                    used[resource] = used.get(resource, 0) + count * times
            self._used[node] = used
        return used

    def allocatable(self, node: NodeRecord) -> dict[str, int]:
        found = self._allocatable.get(node.name)
        if found is None:
            found = self._allocatable[node.name] = dict(node.resources)
        return found


def fits_other_resources(index: PodIndex, node: NodeRecord, traits: PodTraits) -> bool:
    used, allocatable = index.used(node.name), index.allocatable(node)
    if used["pods"] + 1 > allocatable.get("pods", 0):
        return False
    return all(count <= allocatable.get(r, 0) - used.get(r, 0) for r, count in traits.other if count > 0)


class SpreadState:
    """PodTopologySpread's pre-filter state for one pending pod: per constraint the matching pods per domain."""

    def __init__(self, index: PodIndex, pod: PodRecord) -> None:
        constraints = pod.traits.spread
        labels = dict(pod.traits.labels)
        keys = {c.topology_key for c in constraints}
        self.constraints: list[tuple[SpreadConstraint, Selector | None, dict[str, int], int, bool]] = []
        counting = [
            n
            for n in index.nodes.values()
            if all(k in n.labels for k in keys)
            and all(self._counts_node(c, n, pod) for c in constraints)  # per-constraint policies
        ]
        namespace_pods = index.by_namespace().get(pod.namespace, ())
        for constraint in constraints:
            selector = _with_label_keys(constraint.selector, constraint.match_label_keys, labels)
            counts: dict[str, int] = {n.labels[constraint.topology_key]: 0 for n in counting}
            counting_names = {n.name for n in counting}
            for other in namespace_pods:
                if other.terminating or other.node not in counting_names:
                    continue
                if selects(selector, dict(other.traits.labels)):
                    domain = index.nodes[other.node].labels[constraint.topology_key]
                    counts[domain] += 1
            minimum = min(counts.values(), default=0)
            if len(counts) < constraint.min_domains:
                minimum = 0
            self.constraints.append((constraint, selector, counts, minimum, selects(selector, labels)))

    @staticmethod
    def _counts_node(constraint: SpreadConstraint, node: NodeRecord, pod: PodRecord) -> bool:
        if constraint.honor_node_affinity and not eligible(node, pod.constraints, taints=False):
            return False
        return not constraint.honor_node_taints or tolerates_all(pod.constraints.tolerations, node.taints)

    def allows(self, node: NodeRecord) -> bool:
        for constraint, _, counts, minimum, self_match in self.constraints:
            domain = node.labels.get(constraint.topology_key)
            if domain is None:
                return False  # the node lacks the topology key
            if counts.get(domain, 0) + self_match - minimum > constraint.max_skew:
                return False
        return True


def _with_label_keys(selector: Selector | None, keys: tuple[str, ...], labels: Mapping[str, str]) -> Selector | None:
    """matchLabelKeys: the pod's own values of those keys are ANDed into the selector."""
    extra = tuple((k, "In", (labels[k],)) for k in keys if k in labels)
    if selector is None or not extra:
        return selector
    return Selector(selector.match_labels, selector.expressions + extra)


class AffinityState:
    """InterPodAffinity's pre-filter state for one pending pod: topology pairs it is kept out of or drawn to."""

    def __init__(self, index: PodIndex, pod: PodRecord) -> None:
        nodes = index.nodes
        self.blocked: set[tuple[str, str]] = set()
        for existing in index.anti_affinity:  # existing pods' anti-affinity against this pod
            for term in existing.traits.anti_affinity:
                value = nodes[existing.node].labels.get(term.topology_key)
                if term.understood and value is not None and term_selects(term, existing.namespace, pod):
                    self.blocked.add((term.topology_key, value))
        own_anti = [t for t in pod.traits.anti_affinity if t.understood]
        self.affinity = [t for t in pod.traits.affinity if t.understood]
        self.attracted: set[tuple[str, str]] = set()
        self.first_of_series = False
        if not own_anti and not self.affinity:
            self._blocked_keys = {key for key, _ in self.blocked}
            return
        by_namespace = index.by_namespace()
        for term in own_anti:
            for namespace in term_namespaces(term, pod.namespace, by_namespace):
                for other in by_namespace.get(namespace, ()):
                    value = nodes[other.node].labels.get(term.topology_key)
                    if value is not None and selects(term.selector, dict(other.traits.labels)):
                        self.blocked.add((term.topology_key, value))
        if self.affinity:
            candidates: set[str] = set.intersection(
                *(term_namespaces(t, pod.namespace, by_namespace) for t in self.affinity)
            )
            for namespace in candidates:
                for other in by_namespace.get(namespace, ()):
                    labels = dict(other.traits.labels)
                    if all(selects(t.selector, labels) for t in self.affinity):
                        for t in self.affinity:
                            value = nodes[other.node].labels.get(t.topology_key)
                            if value is not None:
                                self.attracted.add((t.topology_key, value))
        self.first_of_series = not self.attracted and all(term_selects(t, pod.namespace, pod) for t in self.affinity)
        self._blocked_keys = {key for key, _ in self.blocked}

    @property
    def needed(self) -> bool:
        """False when nothing keeps the pod out of or draws it to any domain: the filter passes everywhere."""
        return bool(self.blocked or self.affinity)

    def allows(self, node: NodeRecord) -> bool:
        labels = node.labels
        if any((key, labels.get(key)) in self.blocked for key in self._blocked_keys):
            return False
        for term in self.affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False  # every topology key of the affinity terms must be on the node
            if (term.topology_key, value) not in self.attracted and not self.first_of_series:
                return False
        return True


def first_failing_filter(
    index: PodIndex,
    node: NodeRecord,
    pod: PodRecord,
    spread: SpreadState | None,
    affinity: AffinityState | None,
) -> str | None:
    """The first of `FILTERS` that keeps `pod` off `node`, None when all let it on."""
    if not fits_other_resources(index, node, pod.traits):
        return "other_resources"
    if spread is not None and not spread.allows(node):
        return "topology_spread"
    if affinity is not None and not affinity.allows(node):
        return "pod_affinity"
    return None
