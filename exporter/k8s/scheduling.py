"""Where a pod may be placed, as kube-scheduler decides it: nodeSelector, required node affinity, taints and
tolerations (pure).

The predicates are the cluster view's (`exporter.kube.eligibility`, checked against a real kube-scheduler):
nodeSelectorTerms ORed, the expressions of a term ANDed, In / NotIn / Exists / DoesNotExist / Gt / Lt, an
empty term matching no node, and `Toleration.ToleratesTaint`. This module reads them from plain object dicts
of any origin (a manifest may hold the wrong type anywhere, where the API server's objects are validated).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.fields import as_dict, as_list, strs
from exporter.kube.eligibility import eligible
from exporter.kube.records import AffinityTerm, Constraints, NodeRecord, Requirement, Taint, Toleration

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})  # PreferNoSchedule only scores nodes

__all__ = ["BLOCKING_EFFECTS", "Constraints", "Taint", "Toleration", "allows", "constraints", "taints"]


def _requirements(items: Any) -> tuple[Requirement, ...]:
    return tuple(
        (str(r.get("key") or ""), str(r.get("operator") or ""), tuple(str(v) for v in as_list(r.get("values"))))
        for r in (as_dict(x) for x in as_list(items))
    )


def constraints(spec: Mapping[str, Any]) -> Constraints:
    """The placement constraints of a pod spec: nodeSelector, required node affinity, tolerations."""
    required = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    affinity = None
    if isinstance(required, dict):
        affinity = tuple(
            AffinityTerm(_requirements(t.get("matchExpressions")), _requirements(t.get("matchFields")))
            for t in (as_dict(x) for x in as_list(required.get("nodeSelectorTerms")))
        )
    tolerations: tuple[Toleration, ...] = tuple(
        (str(t.get("key") or ""), str(t.get("operator") or "Equal"), str(t.get("value") or ""),
         str(t.get("effect") or ""))
        for t in (as_dict(x) for x in as_list(spec.get("tolerations")))
    )  # fmt: skip
    return Constraints(tuple(sorted(strs(spec.get("nodeSelector")).items())), affinity, tolerations)


def taints(node_spec: Mapping[str, Any]) -> tuple[Taint, ...]:
    """A node's taints as (key, value, effect), every effect kept (`allows` looks at the blocking ones)."""
    return tuple(
        (str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in (as_dict(x) for x in as_list(node_spec.get("taints")))
    )


def allows(c: Constraints, name: str, labels: Mapping[str, str], node_taints: tuple[Taint, ...] | None = ()) -> bool:
    """`c` lets the scheduler place the pod on this node (`node_taints` None: taints not looked at).

    Whether the node is Ready and offers the resources is another question."""
    blocking = tuple(t for t in node_taints or () if t[2] in BLOCKING_EFFECTS)
    return eligible(NodeRecord(name, labels=dict(labels), taints=blocking), c, taints=node_taints is not None)
