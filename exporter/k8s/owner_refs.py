"""The controller ownerReference of an object, and whether it names a serving operator's resource (pure):
`OPERATORS` and `THROUGH_LABELS`, read by `exporter.k8s.owners` (a pod's chain) and `exporter.k8s.workloads` (a
workload's owner). A `THROUGH_LABELS` controller is one the cluster role does not read: the label of what it
controls (a workload, its pod template, or a pod) names the end of the chain. `SCALED_THROUGH`: what an
autoscaler targets in a workload's stead (RBG's adapter of a role), named from the pods' labels, read by
`exporter.replicas.owned` (an HPA's `workload`) and the RBG reader of the audit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.fields import as_dict, as_list

# (API group, kind) -> where the operator makes itself the controller owner of the workload it generates
OPERATORS: dict[tuple[str, str], str] = {
    ("serving.kserve.io", "InferenceService"): "kserve/kserve, the predictor's raw-deployment reconciler: "
        "controllerutil.SetControllerReference(isvc, deployment, ...) (Knative mode: `THROUGH_LABELS`)",
    ("kaito.sh", "Workspace"): "kaito-project/kaito pkg/workspace/manifests: the StatefulSet's OwnerReferences "
        "are metav1.NewControllerRef(workspace, kaitov1beta1.GroupVersion.WithKind(\"Workspace\"))",
    ("apps.nvidia.com", "NIMService"): "NVIDIA/k8s-nim-operator, the platform reconcilers: "
        "controllerutil.SetControllerReference(nimService, resource, ...) on each rendered object",
    ("ome.io", "InferenceService"): "sgl-project/ome v0.1.5 pkg/controller/v1beta1/inferenceservice/reconcilers/"
        "common/deployment_reconciler.go:148 (each RawDeployment component's Deployment) and :163 (a MultiNode "
        "component's LeaderWorkerSet): controllerutil.SetControllerReference(isvc, ..., r.Scheme)",
    ("workloads.x-k8s.io", "RoleBasedGroup"): "sgl-project/rbg v0.7.0 pkg/reconciler/deploy_reconciler.go:159-166, "
        "sts_reconciler.go:496-503, lws_reconciler.go:345-352: each role's Deployment, StatefulSet or "
        "LeaderWorkerSet WithOwnerReferences(... WithController(true)) to the RoleBasedGroup (its default "
        "RoleInstanceSet, roleinstanceset_reconciler.go:196-203, is followed from its pods: `THROUGH_LABELS`)",
    # the pods' controller is a RayCluster (ray-project/kuberay v1.7.0 raycluster_controller.go:1753 buildHeadPod,
    # :1800 buildWorkerPod: controllerutil.SetControllerReference(&instance, &pod, ...)), whose controller is the
    # RayService (rayservice_controller.go:1544 constructRayClusterForRayService: ctrl.SetControllerReference(
    # rayService, rayCluster, ...)): the RayCluster's ownerReferences are read from the cluster role's watch of them
    ("ray.io", "RayService"): "ray-project/kuberay v1.7.0 rayservice_controller.go:1544 "
        "constructRayClusterForRayService: ctrl.SetControllerReference(rayService, rayCluster, scheme)",
}  # fmt: skip


# (API group, kind) of a controller that is itself generated -> (the label its workload carries naming the
# operator resource, that resource's kind). KServe v0.20.0 in Knative mode: the InferenceService controls the
# Knative Service `<name>-predictor` (components/predictor.go:873) and labels its Revision template
# `serving.kserve.io/inferenceservice: <name>` (predictor.go:504-511); Knative Serving v0.48.1 makes the
# Configuration, then each Revision from that template (configuration/resources/revision.go:32-54, each
# controlled by the one before), and the Revision's Deployment, controlled by the Revision, with the
# Revision's labels (revision/resources/deploy.go:352-380, meta.go:49-63). The label names the end of the
# chain the ownerReferences of the Revision, Configuration and Service lead to, which the role does not read.
# KAITO v0.12.0: an InferenceSet controls the Workspaces it creates and labels each
# `inferenceset.kaito.sh/created-by: <name>` (pkg/utils/inferenceset/inferenceset.go:133-179); the Workspace's
# StatefulSet, controlled by the Workspace, carries that label on its pod template (its selector), not on
# itself (pkg/workspace/manifests/manifests.go:135-180). A Workspace without it is the resource the user edits.
# Dynamo (github.com/ai-dynamo/dynamo; the repository tags no operator release, so each file at the commit
# named): the DynamoGraphDeployment makes one DynamoComponentDeployment per component and labels it
# `nvidia.com/dynamo-graph-deployment-name: <graph>` (deploy/operator/internal/dynamo/graph.go
# generateSingleDCD, 003d1ee5de27986d5265b7a4bedb1e9241974034; the constant in internal/consts/consts.go,
# b539fd260765eeddbf75361ff4837f2fd8be61d1); the DynamoComponentDeployment's Deployment (or, multinode, its
# LeaderWorkerSet) is made by controller_common.SyncResource, which sets the DynamoComponentDeployment as its
# controller (resource.go, ctrl.SetControllerReference, 0284ad8648d328adb8b00be2cf6eac3c20736675), with the
# DynamoComponentDeployment's labels on itself (getKubeLabels) and that label on its pod template
# (generatePodTemplateSpec; dynamocomponentdeployment_controller.go, 015d2b9e285e278f703564d84af2e0f20d47eb17).
# RBG v0.7.0 (sgl-project/rbg 01df6fc), a role of its default workload: the RoleBasedGroup controls the
# RoleInstanceSet `<group>-<role>` (pkg/reconciler/roleinstanceset_reconciler.go:185-203), which controls each
# RoleInstance `<set>-<ordinal>` (roleinstanceset/statefulmode/stateful_instance_set_utils.go:75, :208-210),
# which controls its pods (roleinstance/core/instance_core.go:127-128: metav1.NewControllerRef(instance,
# RoleInstance)); each pod carries its template's `rbg.workloads.x-k8s.io/group-name: <group>` (the role's
# common labels, api/workloads/v1alpha2/helper.go:34-42, set on every component template by
# pod_reconciler.go:143). Here the label is on the pod the RoleInstance controls (`owners.generated_of_pod`).
THROUGH_LABELS: dict[tuple[str, str], tuple[str, str]] = {
    ("serving.knative.dev", "Revision"): ("serving.kserve.io/inferenceservice", "InferenceService"),
    ("kaito.sh", "Workspace"): ("inferenceset.kaito.sh/created-by", "InferenceSet"),
    ("nvidia.com", "DynamoComponentDeployment"): ("nvidia.com/dynamo-graph-deployment-name", "DynamoGraphDeployment"),
    ("workloads.x-k8s.io", "RoleInstance"): ("rbg.workloads.x-k8s.io/group-name", "RoleBasedGroup"),
}


# kind of an object an autoscaler targets in a workload's stead -> (the operator resource's kind, the pod label
# naming it, the pod labels whose values, joined by "-", name the object). RBG v0.7.0 (sgl-project/rbg 01df6fc):
# for a role with scalingAdapter.enable the group makes and owns the adapter `<group>-<role>`
# (pkg/scale/scaling_adapter.go:25-27, internal/controller/workloads/rolebasedgroup_controller.go:820-877), and
# every pod of the role carries both names (api/workloads/v1alpha2/helper.go:34-42, whatever its workload kind).
SCALED_THROUGH: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "RoleBasedGroupScalingAdapter": (
        "RoleBasedGroup",
        "rbg.workloads.x-k8s.io/group-name",
        ("rbg.workloads.x-k8s.io/group-name", "rbg.workloads.x-k8s.io/role-name"),
    ),
}


def scaled_through(pod_labels: Mapping[str, Any]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """((kind, name) an autoscaler may target to scale a pod with `pod_labels`, (kind, name) of the operator
    resource that object scales) for each `SCALED_THROUGH` entry whose labels the pod carries."""
    out = []
    for kind, (owner_kind, owner_label, parts) in SCALED_THROUGH.items():
        values = [str(pod_labels.get(label) or "") for label in parts]
        if all(values) and pod_labels.get(owner_label):
            out.append(((kind, "-".join(values)), (owner_kind, str(pod_labels[owner_label]))))
    return out


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]  # "v1" (the core group) reads as ""


def controller(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The ownerReference marked `controller: true` ({} where none: at most one is, the API server enforces it)."""
    for ref in as_list(metadata.get("ownerReferences")):
        r = as_dict(ref)
        if r.get("controller") is True:
            return r
    return {}


def operator_owner(
    metadata: Mapping[str, Any], template_labels: Mapping[str, Any] | None = None
) -> tuple[str, str] | None:
    """(kind, name) of the operator resource a generated controller's label names (`THROUGH_LABELS`, on the
    workload or pod of `metadata`, or the workload's pod template), else of the controller owner when it is an
    operator resource of `OPERATORS`, else None."""
    ref = controller(metadata)
    key = (_group(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""))
    if key in THROUGH_LABELS:
        label, kind = THROUGH_LABELS[key]
        name = str(as_dict(metadata.get("labels")).get(label) or (template_labels or {}).get(label) or "")
        if name:
            return kind, name
    return (key[1], str(ref.get("name") or "")) if key in OPERATORS and ref.get("name") else None
