"""The cluster role's engine pods: one watch feeds the routes, the replica start-ups and the audit.

Engine pods are those the node role's discovery scrapes (the scrape annotation), or those
`cluster.engine_label_selector` selects. They are a view of the cluster role's one pod watch
(`exporter.kube.pods`, which says why no server-side selector): the view keeps a few fields per engine
pod and drops every other pod.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from exporter.config import Cluster
from exporter.k8s import owners
from exporter.k8s.selectors import parse_label_selector
from exporter.kube.pods import pod_watch
from exporter.replicas import autoscalers, model_info, startup
from exporter.replicas.collector import ReplicasCollector
from exporter.sources.kube_reflector import ReflectorView
from exporter.sources.kube_shared import shared


def engine_pods(api: Any, config: Cluster) -> ReflectorView[startup.PodStart]:
    selector = config.engine_label_selector
    scrape = "" if selector else f"{config.engine_annotation_prefix}/scrape"
    chosen = parse_label_selector(selector) if selector else None

    engine_annotation = f"{config.engine_annotation_prefix}/engine"

    def record(obj: dict[str, Any]) -> startup.PodStart | None:
        if chosen is not None and not chosen.matches((obj.get("metadata") or {}).get("labels") or {}):
            return None
        start = startup.pod_start(obj, scrape)
        return None if start is None else replace(start, model=model_info.read(obj, engine_annotation))

    return pod_watch(api, page_size=config.page_size).view(record)


def replicas_collector(api: Any, pods: ReflectorView[startup.PodStart], page_size: int = 500) -> ReplicasCollector:
    """The replicas collector over the engine-pod watch, with the HorizontalPodAutoscalers that scale them and
    the operator owner of each Deployment, StatefulSet and LeaderWorkerSet (views of the watches the audit
    reads too: their ownerReferences) and of each RayCluster (KubeRay's pods' controller; its own watch)."""
    hpas = shared(api, "horizontalpodautoscalers", optional=True, page_size=page_size).view(
        autoscalers.autoscaler_record
    )
    workloads = {
        "deployments": shared(api, "deployments", optional=True, page_size=page_size).view(
            owners.owned_record("Deployment")
        ),
        "statefulsets": shared(api, "statefulsets", optional=True, page_size=page_size).view(
            owners.owned_record("StatefulSet")
        ),
        "leaderworkersets": shared(api, "leaderworkersets", optional=True, page_size=page_size).view(
            owners.owned_record("LeaderWorkerSet")
        ),
        # KubeRay's pods are a RayCluster's, which a RayService controls: no Deployment in between
        "rayclusters": shared(api, "rayclusters", optional=True, page_size=page_size).view(
            owners.owned_record("RayCluster")
        ),
    }
    return ReplicasCollector(pods, hpas, workloads=workloads)
