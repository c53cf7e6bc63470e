"""The cluster role's engine pods: one watch feeds both the routes and the replica start-ups.

Engine pods are those the node role's discovery scrapes (the scrape annotation), or those
`cluster.engine_label_selector` selects. They are a view of the cluster role's one pod watch
(`exporter.kube.pods`, which says why no server-side selector): the view keeps a few fields per engine
pod and drops every other pod.
"""

from __future__ import annotations

from typing import Any

from exporter.audit.collector import AuditCollector
from exporter.audit.model import parse_label_selector
from exporter.audit.recognise import Recognition
from exporter.config import Cluster
from exporter.kube.pods import pod_watch
from exporter.replicas import autoscalers, startup
from exporter.replicas.collector import ReplicasCollector
from exporter.routes.collector import RoutesCollector, make_reflectors
from exporter.sources.kube import KubeConfigError, Reflector, ReflectorView, connect


def engine_pods(api: Any, config: Cluster) -> ReflectorView[startup.PodStart]:
    selector = config.engine_label_selector
    scrape = "" if selector else f"{config.engine_annotation_prefix}/scrape"
    chosen = parse_label_selector(selector) if selector else None

    def record(obj: dict[str, Any]) -> startup.PodStart | None:
        if chosen is not None and not chosen.matches((obj.get("metadata") or {}).get("labels") or {}):
            return None
        return startup.pod_start(obj, scrape)

    return pod_watch(api, page_size=config.page_size).view(record)


def build_engine_pod_collectors(
    config: Cluster, kubeconfig: str | None
) -> list[RoutesCollector | ReplicasCollector | AuditCollector]:
    """The routes, replicas and audit collectors (those enabled), sharing one engine-pod reflector; the audit
    reads its measured cold starts from the replicas collector's start-up histograms."""
    if not (config.routes.enabled or config.replicas.enabled or config.audit.enabled):
        return []
    try:
        api = connect(kubeconfig)
    except KubeConfigError:
        return []  # the cluster collector reports the missing configuration; one failure, said once
    pods = engine_pods(api, config)  # started with the first collector that reads it, stopped with the last
    collectors: list[RoutesCollector | ReplicasCollector | AuditCollector] = []
    if config.routes.enabled:
        collectors.append(RoutesCollector({**make_reflectors(api, config.routes), "pods": pods}))
    if config.replicas.enabled:
        hpas = Reflector(api, "horizontalpodautoscalers", transform=autoscalers.autoscaler_record, optional=True)
        collectors.append(ReplicasCollector(pods, hpas))
    if config.audit.enabled:
        replicas = next((c for c in collectors if isinstance(c, ReplicasCollector)), None)
        histograms = replicas.startup_histograms if replicas is not None else None
        how = Recognition(
            f"{config.engine_annotation_prefix}/scrape",
            parse_label_selector(config.engine_label_selector) if config.engine_label_selector else None,
        )
        collectors.append(AuditCollector.from_api(api, histograms, how, page_size=config.page_size))
    return collectors
