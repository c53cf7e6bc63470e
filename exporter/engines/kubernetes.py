"""The discovery watch: opted-in engine pods on this node, from a list+watch reflector."""

from __future__ import annotations

import os

from exporter.catalogue import cluster
from exporter.collect import CollectorUnavailable
from exporter.config import ConfigError, KubernetesDiscovery
from exporter.engines.discovery import PodRecord, pod_record, target_for
from exporter.engines.targets import EngineTarget
from exporter.exposition import Family
from exporter.sources.kube_connect import KubeConfigError, connect
from exporter.sources.kube_reflector import Reflector


class DiscoveredTargets:
    """A BackgroundCollector + ReadyCollector: watches pods on this node and reports how fresh the view is."""

    name = "engine_discovery"

    def __init__(self, config: KubernetesDiscovery, kubeconfig: str | None) -> None:
        node = config.node_name or os.environ.get("NODE_NAME", "")
        if not node:
            raise ConfigError(["engines.kubernetes_discovery.node_name: not set and $NODE_NAME is empty"])
        self._config = config
        self._kubeconfig = kubeconfig
        self._node = node
        self._reflector: Reflector[PodRecord] | None = None
        self._error = ""

    def start(self) -> None:
        try:
            api = connect(self._kubeconfig)
        except KubeConfigError as exc:
            self._error = str(exc)  # reported through collect(); engines from static targets keep working
            return
        prefix = self._config.annotation_prefix
        self._reflector = Reflector(
            api, "pods", transform=lambda obj: pod_record(obj, prefix), field_selector=f"spec.nodeName={self._node}"
        )
        self._reflector.start()

    def close(self) -> None:
        if self._reflector is not None:
            self._reflector.stop()

    def ready(self) -> bool:
        return self._reflector is None or self._reflector.synced()

    def pods(self) -> list[PodRecord]:
        """The opted-in pods on this node (none before the watch started)."""
        return [] if self._reflector is None else list(self._reflector.items().values())

    def targets(self) -> list[EngineTarget]:
        found = (target_for(pod, self._config) for pod in self.pods())
        return [t for t in found if t is not None]

    def collect(self) -> list[Family]:
        if self._reflector is None:
            raise CollectorUnavailable(self._error or "not started")
        synced = Family(cluster.LAST_SYNC)
        stamp = self._reflector.last_sync_timestamp()
        if stamp is not None:
            synced.add((), stamp)
        return [synced]
