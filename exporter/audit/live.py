"""The objects of a live cluster, through `exporter.sources.kube`: which resources the audit reads, and how.

The API server's lists carry neither `kind` nor `apiVersion` on their items: each transform stamps them
back, then reduces the object to the audit's model (the same pure functions as for manifests).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from exporter.audit import inventory, model
from exporter.audit.inventory import Inventory
from exporter.sources.kube import Reflector, Reflectors

# resource -> (apiVersion, kind, optional: a CRD that may be absent or a grant that may be missing)
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "deployments": ("apps/v1", "Deployment", False),
    "statefulsets": ("apps/v1", "StatefulSet", False),
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
    "nodes": ("v1", "Node", True),
}


def stamp(resource: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The transform of `resource`: the object with its kind and apiVersion, less what no check reads."""
    api_version, kind, _ = RESOURCES[resource]

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations", "ownerReferences") if k in meta}
        body: dict[str, Any] = {k: obj[k] for k in ("spec", "status") if k in obj}
        if resource != "nodes":
            body.pop("status", None)
        return {"apiVersion": api_version, "kind": kind, "metadata": kept, **body}

    return transform


def reflectors(api: Any, namespace: str | None = None, **options: Any) -> Reflectors:
    """One reflector per resource the checks read (nodes cluster-wide), not started.

    Written out one by one: the RBAC test finds each watch (and its grant) by reading this code.
    """

    def optional(resource: str) -> dict[str, Any]:
        return {"transform": stamp(resource), "namespace": namespace, "optional": RESOURCES[resource][2], **options}

    return Reflectors(
        {
            "deployments": Reflector(api, "deployments", **optional("deployments")),
            "statefulsets": Reflector(api, "statefulsets", **optional("statefulsets")),
            "leaderworkersets": Reflector(api, "leaderworkersets", **optional("leaderworkersets")),
            "horizontalpodautoscalers": Reflector(
                api, "horizontalpodautoscalers", **optional("horizontalpodautoscalers")
            ),
            "scaledobjects": Reflector(api, "scaledobjects", **optional("scaledobjects")),
            "podautoscalers": Reflector(api, "podautoscalers", **optional("podautoscalers")),
            "poddisruptionbudgets": Reflector(api, "poddisruptionbudgets", **optional("poddisruptionbudgets")),
            "services": Reflector(api, "services", **optional("services")),
            "ingresses": Reflector(api, "ingresses", **optional("ingresses")),
            "httproutes": Reflector(api, "httproutes", **optional("httproutes")),
            "routes": Reflector(api, "routes", **optional("routes")),
            "inferencepools": Reflector(api, "inferencepools", **optional("inferencepools")),
            "nodes": Reflector(api, "nodes", **{**optional("nodes"), "namespace": None}),  # cluster-scoped
        }
    )


def collect(views: Mapping[str, Reflector[dict[str, Any]]]) -> Inventory:
    """The inventory of the reflectors' current views; nodes stay unseen (None) when they are not granted."""
    inv = Inventory()
    for reflector in views.values():
        for obj in reflector.items().values():
            inventory.add(inv, obj)
    nodes = views.get("nodes")
    if nodes is not None and nodes.available() and inv.around.nodes is None:
        inv.around.nodes = []
    inv.skipped.clear()
    return inv


def unavailable(views: Mapping[str, Reflector[dict[str, Any]]]) -> list[str]:
    """The optional resources that are not served or not granted (their checks see nothing of them)."""
    return [name for name, r in views.items() if r.synced() and not r.available()]


def pods_reflector(api: Any) -> Reflector[model.Pod]:
    """Every running pod, reduced to where it runs and whether it asks for a GPU (non-gpu-pods-on-gpu-nodes)."""
    return Reflector(api, "pods", transform=model.pod, optional=True)
