"""The objects of a live cluster, through `exporter.sources.kube_reflector`: which resources the audit reads, and how.

The API server's lists carry neither `kind` nor `apiVersion` on their items: each transform stamps them
back, then reduces the object to the audit's model (the same pure functions as for manifests). ConfigMaps are
read for the variables and files the engines read from them, as `exporter.k8s.environment` reads them from
manifests; of each only its short `data` values are kept (`environment.kept`). Of GKE's BackendConfigs only
the name, namespace and timeoutSec are kept (`frontends.backend_config_kept`). The serving operators'
resources (a KServe InferenceService, a RoleBasedGroup, ...) and the runtimes they name are read as from
manifests (`exporter.k8s.operators`): of each its name, namespace, labels, annotations, ownerReferences and
spec; `inventory.finish` derives their workloads and drops the workloads they generate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from exporter.audit import inventory, nodes
from exporter.audit.inventory import Inventory
from exporter.audit.recognise import Recognition, engine_container, is_router
from exporter.k8s import environment, frontends, workloads
from exporter.k8s.fields import meta
from exporter.sources.kube_mirror import Mirror, Reflectors
from exporter.sources.kube_reflector import Reflector
from exporter.sources.kube_shared import shared

# resource -> (apiVersion, kind, optional: a CRD that may be absent or a grant that may be missing)
RESOURCES: dict[str, tuple[str, str, bool]] = {
    # every one optional: a grant missing after an upgrade must not hold back the cluster role's readiness
    "deployments": ("apps/v1", "Deployment", True),
    "statefulsets": ("apps/v1", "StatefulSet", True),
    "leaderworkersets": ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", True),
    "horizontalpodautoscalers": ("autoscaling/v2", "HorizontalPodAutoscaler", True),
    "scaledobjects": ("keda.sh/v1alpha1", "ScaledObject", True),
    "podautoscalers": ("autoscaling.aibrix.ai/v1alpha1", "PodAutoscaler", True),
    "poddisruptionbudgets": ("policy/v1", "PodDisruptionBudget", True),
    "services": ("v1", "Service", True),
    "ingresses": ("networking.k8s.io/v1", "Ingress", True),
    "httproutes": ("gateway.networking.k8s.io/v1", "HTTPRoute", True),
    "routes": ("route.openshift.io/v1", "Route", True),
    "inferencepools": ("inference.networking.k8s.io/v1", "InferencePool", True),
    "backendconfigs": (frontends.BACKEND_CONFIG_API, "BackendConfig", True),
    "configmaps": ("v1", "ConfigMap", True),
    "nodes": ("v1", "Node", True),
}
# the serving operators' resources the user edits (`exporter.k8s.operators.READERS`), each at the version its
# reader reads, and the runtimes and adapters they refer to (`REFERRED`); see `exporter.sources.kube_resources`
_OPERATED: dict[str, tuple[str, str, bool]] = {
    "kserve_inferenceservices": ("serving.kserve.io/v1beta1", "InferenceService", True),
    "kserve_servingruntimes": ("serving.kserve.io/v1alpha1", "ServingRuntime", True),
    "kserve_clusterservingruntimes": ("serving.kserve.io/v1alpha1", "ClusterServingRuntime", True),
    "workspaces": ("kaito.sh/v1beta1", "Workspace", True),
    "inferencesets": ("kaito.sh/v1beta1", "InferenceSet", True),
    "rayservices": ("ray.io/v1", "RayService", True),
    "nimservices": ("apps.nvidia.com/v1alpha1", "NIMService", True),
    "ome_inferenceservices": ("ome.io/v1beta1", "InferenceService", True),
    "ome_servingruntimes": ("ome.io/v1beta1", "ServingRuntime", True),
    "ome_clusterservingruntimes": ("ome.io/v1beta1", "ClusterServingRuntime", True),
    "rolebasedgroups": ("workloads.x-k8s.io/v1alpha2", "RoleBasedGroup", True),
    "rolebasedgroupscalingadapters": ("workloads.x-k8s.io/v1alpha2", "RoleBasedGroupScalingAdapter", True),
    "dynamographdeployments": ("nvidia.com/v1alpha1", "DynamoGraphDeployment", True),
}
RESOURCES.update(_OPERATED)
OPERATED = tuple(_OPERATED)
# listed cluster-wide whatever the audit's namespace (a ClusterServingRuntime serves every namespace)
CLUSTER_SCOPED = ("nodes", "kserve_clusterservingruntimes", "ome_clusterservingruntimes")


WORKLOAD_RESOURCES = ("deployments", "statefulsets", "leaderworkersets")


def stamp(resource: str, keep: Recognition | None = None) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """The transform of `resource`: the object with its kind and apiVersion, less what no check reads (a node's
    status but its capacity, a ConfigMap's long values, a BackendConfig's spec but its timeoutSec). With `keep`,
    a workload that is neither an engine nor a router is not kept: the cluster role holds the few that matter,
    not every Deployment of the cluster."""
    api_version, kind, _ = RESOURCES[resource]
    if resource == "configmaps":
        return environment.kept
    if resource == "backendconfigs":
        return frontends.backend_config_kept

    def transform(obj: dict[str, Any]) -> dict[str, Any] | None:
        meta = obj.get("metadata") or {}
        kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations", "ownerReferences") if k in meta}
        body: dict[str, Any] = {"spec": obj["spec"]} if "spec" in obj else {}
        if resource == "nodes":
            body["status"] = {"capacity": (obj.get("status") or {}).get("capacity") or {}}
        out = {"apiVersion": api_version, "kind": kind, "metadata": kept, **body}
        if keep is not None and resource in WORKLOAD_RESOURCES:
            w = workloads.workload(out)
            relevant = w is not None and (
                engine_container(w, keep) is not None or any(is_router(c) for p in w.pods for c in p.containers)
            )
            return out if relevant else None
        return out

    return transform


def reflectors(
    api: Any,
    namespace: str | None = None,
    keep: Recognition | None = None,
    on_event: Callable[[], None] | None = None,
    **options: Any,
) -> Reflectors:
    """One view per resource the checks read (nodes cluster-wide), not started, of the process's one watch of
    that resource (the routes and replicas collectors read Services, routes and HPAs too); `keep`: see `stamp`.

    Written out one by one: the RBAC test finds each watch (and its grant) by reading this code.
    """

    def watch(resource: str) -> dict[str, Any]:
        scope = None if resource in CLUSTER_SCOPED else namespace
        return {"namespace": scope, "optional": RESOURCES[resource][2], **options}

    def view(reflector: Reflector[None]) -> Mirror[dict[str, Any]]:
        return reflector.view(stamp(reflector.resource, keep), on_event)

    return Reflectors(
        {
            "deployments": view(shared(api, "deployments", **watch("deployments"))),
            "statefulsets": view(shared(api, "statefulsets", **watch("statefulsets"))),
            "leaderworkersets": view(shared(api, "leaderworkersets", **watch("leaderworkersets"))),
            "horizontalpodautoscalers": view(
                shared(api, "horizontalpodautoscalers", **watch("horizontalpodautoscalers"))
            ),
            "scaledobjects": view(shared(api, "scaledobjects", **watch("scaledobjects"))),
            "podautoscalers": view(shared(api, "podautoscalers", **watch("podautoscalers"))),
            "poddisruptionbudgets": view(shared(api, "poddisruptionbudgets", **watch("poddisruptionbudgets"))),
            "services": view(shared(api, "services", **watch("services"))),
            "ingresses": view(shared(api, "ingresses", **watch("ingresses"))),
            "httproutes": view(shared(api, "httproutes", **watch("httproutes"))),
            "routes": view(shared(api, "routes", **watch("routes"))),
            "inferencepools": view(shared(api, "inferencepools", **watch("inferencepools"))),
            "backendconfigs": view(shared(api, "backendconfigs", **watch("backendconfigs"))),
            "configmaps": view(shared(api, "configmaps", **watch("configmaps"))),
            "nodes": view(shared(api, "nodes", **watch("nodes"))),
            "kserve_inferenceservices": view(
                shared(api, "kserve_inferenceservices", **watch("kserve_inferenceservices"))
            ),
            "kserve_servingruntimes": view(shared(api, "kserve_servingruntimes", **watch("kserve_servingruntimes"))),
            "kserve_clusterservingruntimes": view(
                shared(api, "kserve_clusterservingruntimes", **watch("kserve_clusterservingruntimes"))
            ),
            "workspaces": view(shared(api, "workspaces", **watch("workspaces"))),
            "inferencesets": view(shared(api, "inferencesets", **watch("inferencesets"))),
            "rayservices": view(shared(api, "rayservices", **watch("rayservices"))),
            "nimservices": view(shared(api, "nimservices", **watch("nimservices"))),
            "ome_inferenceservices": view(shared(api, "ome_inferenceservices", **watch("ome_inferenceservices"))),
            "ome_servingruntimes": view(shared(api, "ome_servingruntimes", **watch("ome_servingruntimes"))),
            "ome_clusterservingruntimes": view(
                shared(api, "ome_clusterservingruntimes", **watch("ome_clusterservingruntimes"))
            ),
            "rolebasedgroups": view(shared(api, "rolebasedgroups", **watch("rolebasedgroups"))),
            "rolebasedgroupscalingadapters": view(
                shared(api, "rolebasedgroupscalingadapters", **watch("rolebasedgroupscalingadapters"))
            ),
            "dynamographdeployments": view(shared(api, "dynamographdeployments", **watch("dynamographdeployments"))),
        }
    )


def collect(views: Mapping[str, Mirror[dict[str, Any]]]) -> Inventory:
    """The inventory of the reflectors' current views, the containers' variables resolved from the ConfigMaps
    read; nodes stay unseen (None) when they are not granted."""
    inv = Inventory()
    for name, reflector in views.items():
        if name != "configmaps":
            for obj in reflector.items().values():
                inventory.add(inv, obj)
    nodes = views.get("nodes")
    if nodes is not None and nodes.available() and inv.around.nodes is None:
        inv.around.nodes = []
    config_maps = views.get("configmaps")
    if config_maps is None or not config_maps.available():
        inv.config_maps_unread = "not read: configmaps not granted or not served"
    else:  # a container reads those of its own namespace only
        namespaces = {w.namespace for w in inv.workloads} | {meta(obj, ns)[0] for obj, _, ns in inv.operated}
        for obj in config_maps.items().values():
            if obj["metadata"].get("namespace") in namespaces:
                inventory.add(inv, obj)
    inventory.finish(inv)
    inv.skipped.clear()
    return inv


def unavailable(views: Mapping[str, Mirror[dict[str, Any]]]) -> list[str]:
    """The optional resources that are not served or not granted (their checks see nothing of them)."""
    return [name for name, r in views.items() if r.synced() and not r.available()]


def pods_reflector(api: Any) -> Reflector[nodes.Pod]:
    """Every running pod, reduced to where it runs and whether it asks for a GPU (non-gpu-pods-on-gpu-nodes)."""
    return Reflector(api, "pods", transform=nodes.pod, optional=True)
