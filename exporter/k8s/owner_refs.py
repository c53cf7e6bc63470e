"""The controller ownerReference of an object, and whether it names a serving operator's resource (pure):
`OPERATORS`, read by `exporter.k8s.owners` (a pod's chain) and `exporter.k8s.workloads` (a workload's owner).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.fields import as_dict, as_list

# (API group, kind) -> where the operator makes itself the controller owner of the workload it generates
OPERATORS: dict[tuple[str, str], str] = {
    ("serving.kserve.io", "InferenceService"): "kserve/kserve, the predictor's raw-deployment reconciler: "
        "controllerutil.SetControllerReference(isvc, deployment, ...) (serverless mode: a Knative Revision "
        "owns the Deployment, and the chain ends there)",
    ("kaito.sh", "Workspace"): "kaito-project/kaito pkg/workspace/manifests: the StatefulSet's OwnerReferences "
        "are metav1.NewControllerRef(workspace, kaitov1beta1.GroupVersion.WithKind(\"Workspace\"))",
    ("apps.nvidia.com", "NIMService"): "NVIDIA/k8s-nim-operator, the platform reconcilers: "
        "controllerutil.SetControllerReference(nimService, resource, ...) on each rendered object",
    # the pods' controller is a RayCluster (ray-project/kuberay v1.7.0 raycluster_controller.go:1753 buildHeadPod,
    # :1800 buildWorkerPod: controllerutil.SetControllerReference(&instance, &pod, ...)), whose controller is the
    # RayService (rayservice_controller.go:1544 constructRayClusterForRayService: ctrl.SetControllerReference(
    # rayService, rayCluster, ...)): the RayCluster's ownerReferences are read from the cluster role's watch of them
    ("ray.io", "RayService"): "ray-project/kuberay v1.7.0 rayservice_controller.go:1544 "
        "constructRayClusterForRayService: ctrl.SetControllerReference(rayService, rayCluster, scheme)",
}  # fmt: skip


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]  # "v1" (the core group) reads as ""


def controller(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The ownerReference marked `controller: true` ({} where none: at most one is, the API server enforces it)."""
    for ref in as_list(metadata.get("ownerReferences")):
        r = as_dict(ref)
        if r.get("controller") is True:
            return r
    return {}


def operator_owner(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the controller owner when it is an operator resource of `OPERATORS`, else None."""
    ref = controller(metadata)
    key = (_group(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""))
    return (key[1], str(ref.get("name") or "")) if key in OPERATORS and ref.get("name") else None
