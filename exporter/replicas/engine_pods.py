"""The cluster role's engine pods: one watch feeds both the routes and the replica start-ups.

Engine pods are those the node role's discovery scrapes (the scrape annotation), or those
`cluster.engine_label_selector` selects (filtered by the API server: cheaper). The transform keeps a few
fields per engine pod and drops every other pod.
"""

from __future__ import annotations

from typing import Any

from exporter.config import Cluster
from exporter.replicas import autoscalers, startup
from exporter.replicas.collector import ReplicasCollector
from exporter.routes.collector import RoutesCollector, make_reflectors
from exporter.sources.kube import KubeConfigError, Reflector, connect


def engine_pods(api: Any, config: Cluster) -> Reflector[startup.PodStart]:
    selector = config.engine_label_selector
    scrape = "" if selector else f"{config.engine_annotation_prefix}/scrape"
    return Reflector(api, "pods", transform=lambda o: startup.pod_start(o, scrape), label_selector=selector or None)


def build_engine_pod_collectors(
    config: Cluster, kubeconfig: str | None
) -> list[RoutesCollector | ReplicasCollector]:
    """The routes and replicas collectors (those enabled), sharing one engine-pod reflector."""
    if not (config.routes.enabled or config.replicas.enabled):
        return []
    try:
        api = connect(kubeconfig)
    except KubeConfigError:
        return []  # the cluster collector reports the missing configuration; one failure, said once
    pods = engine_pods(api, config)  # started and stopped by both collectors: Reflector.start is idempotent
    collectors: list[RoutesCollector | ReplicasCollector] = []
    if config.routes.enabled:
        collectors.append(RoutesCollector({**make_reflectors(api, config.routes), "pods": pods}))
    if config.replicas.enabled:
        hpas = Reflector(api, "horizontalpodautoscalers", transform=autoscalers.autoscaler_record, optional=True)
        collectors.append(ReplicasCollector(pods, hpas))
    return collectors
