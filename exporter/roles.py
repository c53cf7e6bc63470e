"""Which collectors each `serve --role` runs."""

from __future__ import annotations

from exporter.collect import Collector, CollectorSet
from exporter.config import Config


def build(role: str, config: Config, kubeconfig: str | None) -> CollectorSet:
    """The collectors of `role` ("node" or "cluster"), not yet started."""
    collectors: list[Collector] = []
    if role == "node":
        from exporter.engines.collector import build_engine_collectors

        collectors += build_engine_collectors(config.engines, kubeconfig)
        from exporter.gpu.collector import build_gpu_collectors

        collectors += build_gpu_collectors(config.gpu, kubeconfig)
    elif role == "cluster":
        from exporter.kube.collector import build_cluster_collectors

        collectors += build_cluster_collectors(config.cluster, kubeconfig)
        from exporter.replicas.engine_pods import build_engine_pod_collectors

        collectors += build_engine_pod_collectors(config.cluster, kubeconfig)
        from exporter.watchdog.collector import build_watchdog_collectors

        collectors += build_watchdog_collectors(config.cluster.watchdog, kubeconfig)
        from exporter.pricing import build_price_collectors

        collectors += build_price_collectors(config.cost)
    else:
        raise ValueError(f"unknown role {role!r}")
    return CollectorSet(collectors)
