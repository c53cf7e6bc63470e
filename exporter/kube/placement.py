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

`PodIndex` holds the bound pods grouped by namespace and traits (the replicas of a workload share them),
so a selector is matched once per workload; the caller evaluates each filter once per shape of pending
pod, and the filters answer with the nodes they exclude, found through the index's topology domains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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
_FINISHED = frozenset({"Succeeded", "Failed"})
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
Usages = dict[str, dict[str, int]]  # node → resource → requested, and "pods" → how many


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


def term_selects(term: PodAffinityTerm, owner_namespace: str, namespace: str, labels: Mapping[str, str]) -> bool:
    """`term` (of a pod in `owner_namespace`) selects a pod in `namespace` with `labels`."""
    if namespace in term.namespaces:
        pass
    elif term.namespace_selector is not None:
        if not selects(term.namespace_selector, {NAMESPACE_NAME_LABEL: namespace}):
            return False
    elif term.namespaces or namespace != owner_namespace:
        return False
    return selects(term.selector, labels)


@dataclass(slots=True)
class Group:
    """The bound pods of one namespace that share their traits (the replicas of a workload)."""

    namespace: str
    traits: PodTraits
    labels: dict[str, str]
    nodes: Counter[str]  # node → pods of the group there
    terminating: Counter[str]  # node → terminating pods among them (topology spread does not count those)

    def live_nodes(self) -> Iterable[str]:
        """The nodes with at least one pod of the group that is not terminating, once per such pod."""
        for node, count in self.nodes.items():
            for _ in range(count - self.terminating.get(node, 0)):
                yield node


def _held(pod: PodRecord) -> bool:
    return bool(pod.node) and pod.phase not in _FINISHED


def _count(into: Usages, node: str, other: tuple[tuple[str, int], ...], sign: int) -> None:
    """Add (sign -1: take away) one pod's non-GPU requests `other` and its pod slot to `node`'s usage."""
    used = into.get(node)
    if used is None:
        into[node] = used = {"pods": 0}
    used["pods"] += sign
    for resource, count in other:
        used[resource] = used.get(resource, 0) + sign * count
    if used["pods"] <= 0:
        del into[node]


class PodIndex:
    """The bound pods that hold resources, grouped by namespace and traits (the replicas of a workload share
    their traits), so a selector is matched once per workload rather than once per pod, and their non-GPU
    usage per node: of every pod, and of the pods without GPUs (what stays when GPU pods move).
    `PodIndexCache` keeps one up to date from one view to the next by moving only the pods whose record
    changed; what depends on the nodes is found again for each view (`refresh`)."""

    def __init__(self, nodes: Mapping[str, NodeRecord], pods: Iterable[PodRecord] = ()) -> None:
        self._groups: dict[str, dict[int, Group]] = {}
        self._anti: dict[tuple[str, int], Group] = {}
        self._used: Usages = {}  # node → the non-GPU requests of every pod bound there
        self._non_gpu: Usages = {}  # node → the same of the pods without GPUs only
        for pod in pods:
            if _held(pod):
                self.add(pod)
        self.refresh(nodes)

    def refresh(self, nodes: Mapping[str, NodeRecord]) -> None:
        """A new view: its nodes, and the caches built from them emptied."""
        self.nodes = nodes
        self._allocatable: dict[str, dict[str, int]] = {}
        self._domains: dict[str, dict[str, list[str]]] = {}
        self._lacking: dict[str, set[str]] = {}
        self._counting: dict[tuple[int, bool, bool, frozenset[str]], set[str]] = {}
        self._zero_counts: dict[tuple[int, str], dict[str, int]] = {}  # keyed by counting sets kept above
        self._anti_terms: dict[str, dict[tuple[str, str], list[tuple[Group, PodAffinityTerm]]]] | None = None
        self._by_label: dict[tuple[str, str], dict[str, list[Group]]] = {}
        self._keep_alive: list[object] = []

    def add(self, pod: PodRecord, sign: int = 1) -> None:
        """Count a bound pod in (sign -1: out again; the record must be the one counted in)."""
        traits, node = pod.traits, pod.node
        by_traits = self._groups.get(pod.namespace)
        if by_traits is None:
            self._groups[pod.namespace] = by_traits = {}
        group = by_traits.get(id(traits))
        if group is None:
            by_traits[id(traits)] = group = Group(pod.namespace, traits, dict(traits.labels), Counter(), Counter())
            if traits.anti_affinity:
                self._anti[(pod.namespace, id(traits))] = group
        group.nodes[node] += sign
        if pod.terminating:
            group.terminating[node] += sign
        used = self._used.get(node)  # inline, not `_count`: every pod event of a view passes here
        if used is None:
            self._used[node] = used = {"pods": 0}
        used["pods"] += sign
        for resource, count in traits.other:
            used[resource] = used.get(resource, 0) + sign * count
        if not (pod.requests or pod.claims):  # what moving the GPU pods would not free
            _count(self._non_gpu, node, traits.other, sign)
        if sign < 0:
            if group.nodes[node] <= 0:
                del group.nodes[node]
                group.terminating.pop(node, None)
            if not group.nodes:
                del by_traits[id(traits)]
                self._anti.pop((pod.namespace, id(traits)), None)
                if not by_traits:
                    del self._groups[pod.namespace]
            if used["pods"] <= 0:
                del self._used[node]

    def remove(self, pod: PodRecord) -> None:
        self.add(pod, -1)

    def groups(self) -> dict[str, dict[int, Group]]:
        """namespace → its groups of pods with the same traits (by the traits' identity)."""
        return self._groups

    def anti_affinity_terms(self, namespace: str, labels: Mapping[str, str]) -> list[tuple[Group, PodAffinityTerm]]:
        """The bound pods' required anti-affinity terms that may select a pod of `namespace` with `labels`
        (looked up by one of each selector's matchLabels; the caller checks the whole term)."""
        if self._anti_terms is None:
            self._anti_terms = {}
            self._anti_unkeyed: dict[str, list[tuple[Group, PodAffinityTerm]]] = {}
            self._anti_anywhere: list[tuple[Group, PodAffinityTerm]] = []
            for group in self._anti.values():
                for term in group.traits.anti_affinity:
                    if term.selector is None or not term.understood:
                        continue  # selects nothing, or not evaluated
                    if term.namespaces or term.namespace_selector is not None:
                        self._anti_anywhere.append((group, term))
                    elif term.selector.match_labels:
                        by_label = self._anti_terms.setdefault(group.namespace, {})
                        by_label.setdefault(term.selector.match_labels[0], []).append((group, term))
                    else:
                        self._anti_unkeyed.setdefault(group.namespace, []).append((group, term))
        by_label = self._anti_terms.get(namespace, {})
        found = [*self._anti_unkeyed.get(namespace, ()), *self._anti_anywhere]
        for pair in labels.items():
            found += by_label.get(pair, ())
        return found

    def selected_groups(self, namespace: str, selector: Selector | None) -> Iterable[Group]:
        """The groups of `namespace` whose pods `selector` selects (candidates by one matchLabel)."""
        if selector is None:
            return ()
        if selector.match_labels:
            key, value = selector.match_labels[0]
            by_value = self._by_label.get((namespace, key))
            if by_value is None:
                by_value = self._by_label[(namespace, key)] = {}
                for group in self._groups.get(namespace, {}).values():
                    if key in group.labels:
                        by_value.setdefault(group.labels[key], []).append(group)
            candidates: Iterable[Group] = by_value.get(value, ())
        else:
            candidates = self._groups.get(namespace, {}).values()
        return [g for g in candidates if selects(selector, g.labels)]

    def zero_counts(self, counting: set[str], key: str) -> dict[str, int]:
        """domain → 0 for the values of `key` on the `counting` nodes (a template: copy it)."""
        cache_key = (id(counting), key)
        found = self._zero_counts.get(cache_key)
        if found is None:
            found = self._zero_counts[cache_key] = {self.nodes[n].labels[key]: 0 for n in counting}
        return found

    def used(self, node: str, *, gpu_pods: bool = True) -> dict[str, int]:
        """resource → the non-GPU requests of the pods bound to `node`, and `pods` → how many there are
        (`gpu_pods=False`: of the pods without GPUs only, what stays when the GPU pods move)."""
        return (self._used if gpu_pods else self._non_gpu).get(node) or {"pods": 0}

    def summary(self) -> tuple[dict[tuple[str, int], tuple[dict[str, int], dict[str, int]]], list[Usages]]:
        """Groups and usage as plain values (what two indexes of the same pods must agree on)."""
        groups = {
            (ns, key): (dict(+g.nodes), dict(+g.terminating))
            for ns, by_traits in self._groups.items()
            for key, g in by_traits.items()
        }
        used = [{n: {r: c for r, c in u.items() if c} for n, u in kept.items()} for kept in (self._used, self._non_gpu)]
        return groups, used

    def allocatable(self, node: NodeRecord) -> dict[str, int]:
        found = self._allocatable.get(node.name)
        if found is None:
            found = self._allocatable[node.name] = dict(node.resources)
        return found

    def domains(self, key: str) -> dict[str, list[str]]:
        """label value → the names of the nodes with that value of `key` (a topology domain's nodes)."""
        found = self._domains.get(key)
        if found is None:
            found = self._domains[key] = {}
            lacking = self._lacking[key] = set()
            for node in self.nodes.values():
                value = node.labels.get(key)
                if value is None:
                    lacking.add(node.name)
                else:
                    found.setdefault(value, []).append(node.name)
        return found

    def lacking(self, key: str) -> set[str]:
        """The names of the nodes without the label `key`."""
        self.domains(key)
        return self._lacking[key]

    def counting(self, pod: PodRecord, affinity: bool, taints: bool, keys: frozenset[str]) -> set[str]:
        """The nodes topology spread counts for the pod: its node affinity and (by policy) taints allow them,
        and they have every key of its constraints."""
        cache_key = (id(pod.constraints), affinity, taints, keys)
        found = self._counting.get(cache_key)
        if found is None:
            self._keep_alive.append(pod.constraints)
            found = self._counting[cache_key] = {
                n.name
                for n in self.nodes.values()
                if all(k in n.labels for k in keys)
                and (not affinity or eligible(n, pod.constraints, taints=False))
                and (not taints or tolerates_all(pod.constraints.tolerations, n.taints))
            }
        return found


class PodIndexCache:
    """One `PodIndex` kept across the views of a collector: each view moves only the pods whose record
    changed (records are immutable; a changed pod is a new record), so its cost is a pass of identity
    tests over the pods instead of regrouping them."""

    def __init__(self) -> None:
        self._index: PodIndex | None = None
        self._pods: Mapping[str, PodRecord] = {}

    def index(self, nodes: Mapping[str, NodeRecord], pods: Mapping[str, PodRecord]) -> PodIndex:
        if self._index is None:
            self._index = PodIndex(nodes, pods.values())
        else:
            index, old = self._index, self._pods
            for key, pod in pods.items():
                before = old.get(key)
                if before is pod:
                    continue
                if before is not None and _held(before):
                    index.remove(before)
                if _held(pod):
                    index.add(pod)
            for key in old.keys() - pods.keys():
                if _held(old[key]):
                    index.remove(old[key])
            index.refresh(nodes)
        self._pods = pods
        return self._index


def fits_other_resources(
    index: PodIndex, node: NodeRecord, other: tuple[tuple[str, int], ...], *, gpu_pods: bool = True
) -> bool:
    """NodeResourcesFit for the non-GPU requests `other` (and one more pod) on `node` (`gpu_pods=False`:
    once the GPU pods bound there had moved, taking their cpu, memory and pod slots with them)."""
    used, allocatable = index.used(node.name, gpu_pods=gpu_pods), index.allocatable(node)
    if used["pods"] + 1 > allocatable.get("pods", 0):
        return False
    return all(count <= allocatable.get(r, 0) - used.get(r, 0) for r, count in other if count > 0)


class SpreadState:
    """PodTopologySpread's pre-filter state for one pending pod: per constraint the matching pods per domain."""

    def __init__(self, index: PodIndex, pod: PodRecord) -> None:
        self.index = index
        constraints = pod.traits.spread
        labels = dict(pod.traits.labels)
        keys = frozenset(c.topology_key for c in constraints)
        self.constraints: list[tuple[SpreadConstraint, dict[str, int], int, bool]] = []
        for constraint in constraints:
            counting = index.counting(pod, constraint.honor_node_affinity, constraint.honor_node_taints, keys)
            key = constraint.topology_key
            selector = _with_label_keys(constraint.selector, constraint.match_label_keys, labels)
            counts = dict(index.zero_counts(counting, key))
            for group in index.selected_groups(pod.namespace, selector):
                for node in group.live_nodes():
                    if node in counting:
                        counts[index.nodes[node].labels[key]] += 1
            minimum = min(counts.values(), default=0)
            if len(counts) < constraint.min_domains:
                minimum = 0
            self.constraints.append((constraint, counts, minimum, selects(selector, labels)))

    def excluded(self) -> set[str]:
        """The nodes the constraints rule out: without the topology key, or in a domain where one more
        matching pod would make the skew exceed maxSkew."""
        out: set[str] = set()
        for constraint, counts, minimum, self_match in self.constraints:
            key = constraint.topology_key
            out |= self.index.lacking(key)
            for domain, names in self.index.domains(key).items():
                if counts.get(domain, 0) + self_match - minimum > constraint.max_skew:
                    out.update(names)
        return out


def _with_label_keys(selector: Selector | None, keys: tuple[str, ...], labels: Mapping[str, str]) -> Selector | None:
    """matchLabelKeys: the pod's own values of those keys are ANDed into the selector."""
    extra = tuple((k, "In", (labels[k],)) for k in keys if k in labels)
    if selector is None or not extra:
        return selector
    return Selector(selector.match_labels, selector.expressions + extra)


class AffinityState:
    """InterPodAffinity's pre-filter state for one pending pod: topology pairs it is kept out of or drawn to."""

    def __init__(self, index: PodIndex, pod: PodRecord) -> None:
        self.index = index
        nodes = index.nodes
        labels = dict(pod.traits.labels)
        self.blocked: set[tuple[str, str]] = set()
        # existing pods' anti-affinity against this pod
        for group, term in index.anti_affinity_terms(pod.namespace, labels):
            if term_selects(term, group.namespace, pod.namespace, labels):
                self._add_domains(self.blocked, nodes, group.nodes, term.topology_key)
        own_anti = [t for t in pod.traits.anti_affinity if t.understood]
        self.affinity = [t for t in pod.traits.affinity if t.understood]
        self.attracted: set[tuple[str, str]] = set()
        self.first_of_series = False
        if own_anti or self.affinity:
            groups = index.groups()
            for term in own_anti:
                for namespace in term_namespaces(term, pod.namespace, groups):
                    for group in index.selected_groups(namespace, term.selector):
                        self._add_domains(self.blocked, nodes, group.nodes, term.topology_key)
            if self.affinity:
                candidates = set.intersection(*(term_namespaces(t, pod.namespace, groups) for t in self.affinity))
                for namespace in candidates:
                    for group in index.selected_groups(namespace, self.affinity[0].selector):
                        if all(selects(t.selector, group.labels) for t in self.affinity[1:]):
                            for t in self.affinity:
                                self._add_domains(self.attracted, nodes, group.nodes, t.topology_key)
                self.first_of_series = not self.attracted and all(
                    term_selects(t, pod.namespace, pod.namespace, labels) for t in self.affinity
                )

    @staticmethod
    def _add_domains(into: set[tuple[str, str]], nodes: Mapping[str, NodeRecord], on: Iterable[str], key: str) -> None:
        for name in on:
            node = nodes.get(name)
            value = node.labels.get(key) if node is not None else None  # a node gone from the view: no domain
            if value is not None:
                into.add((key, value))

    def excluded(self) -> set[str]:
        """The nodes in a domain an anti-affinity term keeps the pod out of, or (required affinity) without
        the topology key or outside every domain that holds a selected pod."""
        domains = self.index.domains
        out: set[str] = set()
        for key, value in self.blocked:
            out.update(domains(key).get(value, ()))
        for term in self.affinity:
            out |= self.index.lacking(term.topology_key)
            if not self.first_of_series:
                for value, names in domains(term.topology_key).items():
                    if (term.topology_key, value) not in self.attracted:
                        out.update(names)
        return out
