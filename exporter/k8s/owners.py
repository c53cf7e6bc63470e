"""The resource a user edits behind a generated workload (pure): the operator resource that controls it.

An operator's controller sets itself as the controller owner of the objects it generates
(`controllerutil.SetControllerReference`: an ownerReference with apiVersion, kind, name, uid,
`controller: true` and `blockOwnerDeletion: true`), and reverts any edit of them. A pod's chain is read from
the ownerReferences of objects already read, never from the operator's own resources:

    Pod -> ReplicaSet (its name less the pod-template hash names the Deployment) -> Deployment -> owner
    Pod -> StatefulSet -> owner;   Pod of a LeaderWorkerSet (its label) -> LeaderWorkerSet -> owner
    Pod -> RayCluster (KubeRay makes the pods itself) -> RayService
    Pod of a RoleInstance (its group-name label) -> RoleBasedGroup

`OPERATORS` (`owner_refs.py`) lists the owners followed (API group, kind); an owner of any other kind ends
the chain, and the generated workload stands. KServe's Knative mode (a Knative Revision controls the
Deployment) is followed by the label Knative copies onto it from the Revision, which KServe set on the Revision
template, KAITO's InferenceSet (a Workspace controls the StatefulSet) by the label the StatefulSet's pod
template carries from the Workspace, Dynamo's DynamoGraphDeployment (a DynamoComponentDeployment controls the
Deployment) by the label the DynamoComponentDeployment passes on to it, and RBG's default workload, a
RoleInstanceSet (a RoleInstance controls the pods), by the label each pod carries naming its RoleBasedGroup
(`THROUGH_LABELS`, read on the pod by `generated_of_pod`). Not followed, for its chain passes an object the
cluster role does not read and no label names its end: Dynamo on Grove (a PodClique controls the pods).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from exporter.k8s.fields import as_dict
from exporter.k8s.owner_refs import OPERATORS, controller, operator_owner
from exporter.k8s.workloads import LWS_NAME_LABEL, workload_of_pod

__all__ = ["OPERATORS", "controller", "operator_owner"]


def generated_of_pod(metadata: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the workload a pod's controller chain starts at: the operator resource a label of the pod
    names where its controller is one the role does not read (`THROUGH_LABELS`: RBG's RoleInstance),
    LeaderWorkerSet (its label), Deployment (of its ReplicaSet), StatefulSet, else its controller's kind
    ("Pod": none). The one reading of a pod's workload for every role (`exporter.pod_fields.workload_of`)."""
    through = operator_owner(metadata)
    if through is not None:
        return through
    name = workload_of_pod(metadata)
    if as_dict(metadata.get("labels")).get(LWS_NAME_LABEL):
        return ("LeaderWorkerSet", name)
    kind = str(controller(metadata).get("kind") or "Pod")
    return ("Deployment" if kind == "ReplicaSet" else kind, name)


Key = tuple[str, str, str]  # namespace, kind, name


def top_owner(namespace: str, kind: str, name: str, owners: Mapping[Key, tuple[str, str]]) -> tuple[str, str]:
    """(kind, name) of the top-most operator resource above the workload, following `owners` (the operator
    owner of each workload read); the workload itself where it has none. An operator resource owned by another
    is followed only where `owners` holds it (a cycle ends where it repeats)."""
    seen: set[Key] = set()
    key = (namespace, kind, name)
    while key in owners and key not in seen:
        seen.add(key)
        key = (namespace, *owners[key])
    return key[1], key[2]


def owned_record(kind: str) -> Callable[[Mapping[str, Any]], tuple[Key, tuple[str, str]] | None]:
    """The reflector transform of a watch of `kind` (Deployment, StatefulSet, LeaderWorkerSet, RayCluster): the object's
    key and its operator owner, None (not kept) for a workload no operator owns."""

    def transform(obj: Mapping[str, Any]) -> tuple[Key, tuple[str, str]] | None:
        metadata = as_dict(obj.get("metadata"))
        template = as_dict(as_dict(as_dict(obj.get("spec")).get("template")).get("metadata"))
        owner = operator_owner(metadata, as_dict(template.get("labels")))
        if owner is None:
            return None
        return (str(metadata.get("namespace") or ""), kind, str(metadata.get("name") or "")), owner

    return transform
