"""Which nodes a pod may be placed on: nodeSelector, required node affinity, taints and tolerations.

The scheduler's filters, for the questions this exporter asks (GPU placement); preferred affinity and
`PreferNoSchedule` taints only score nodes, so they do not change eligibility.
"""

from __future__ import annotations

from exporter.kube.records import AffinityTerm, Constraints, NodeRecord, Requirement, Taint, Toleration

# what the scheduler holds against a cordoned node (NodeUnschedulable plugin) and what the node lifecycle
# controller puts on a NotReady one; a pod that tolerates them may still be placed there
UNSCHEDULABLE_TAINT: Taint = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
NOT_READY_TAINT: Taint = ("node.kubernetes.io/not-ready", "", "NoSchedule")


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes `Toleration.ToleratesTaint`."""
    key, operator, value, effect = toleration
    taint_key, taint_value, taint_effect = taint
    if effect and effect != taint_effect:
        return False
    if key and key != taint_key:
        return False
    if operator == "Exists":
        return True  # an empty key with Exists tolerates everything
    return operator in ("Equal", "") and value == taint_value


def tolerates_all(tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...]) -> bool:
    return all(any(tolerates(t, taint) for t in tolerations) for taint in taints)


def _as_int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def requirement_holds(requirement: Requirement, value: str | None) -> bool:
    """One matchExpressions entry against the node's label value (None: label absent)."""
    _, operator, values = requirement
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        have, bound = _as_int(value), _as_int(values[0] if len(values) == 1 else None)
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False  # an unknown operator matches nothing, as the API server would reject it


def term_matches(term: AffinityTerm, node: NodeRecord) -> bool:
    if not term.expressions and not term.fields:
        return False  # an empty nodeSelectorTerm matches no node
    fields = {"metadata.name": node.name}
    return all(requirement_holds(r, node.labels.get(r[0])) for r in term.expressions) and all(
        requirement_holds(r, fields.get(r[0])) for r in term.fields
    )


def eligible(node: NodeRecord, constraints: Constraints, *, taints: bool = True) -> bool:
    """Constraints allow `node`: selector labels equal, one affinity term matches, every taint tolerated
    (`taints=False`: not looked at, as topology spread counts nodes by default).

    Schedulability (Ready, not cordoned) and whether the node offers the resource are checked by the caller.
    """
    labels = node.labels
    if any(labels.get(key) != value for key, value in constraints.node_selector):
        return False
    if constraints.affinity is not None and not any(term_matches(t, node) for t in constraints.affinity):
        return False
    return not taints or tolerates_all(constraints.tolerations, node.taints)


def admits(node: NodeRecord, constraints: Constraints) -> bool:
    """The scheduler may place the pod on `node`: `eligible`, and a cordoned or NotReady node only for a
    pod that tolerates the unschedulable or not-ready taint (DaemonSet-like pods, tolerate-all pods)."""
    implied = ((UNSCHEDULABLE_TAINT,) if node.cordoned else ()) + (() if node.ready else (NOT_READY_TAINT,))
    return tolerates_all(constraints.tolerations, implied) and eligible(node, constraints)
