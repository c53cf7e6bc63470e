"""The discovery watch: opted-in engine pods on this node, a view of the node role's one watch of its pods."""

from __future__ import annotations

import os

from exporter.catalogue import cluster
from exporter.collect import CollectorUnavailable
from exporter.config import ConfigError, KubernetesDiscovery
from exporter.engines.discovery import PodRecord, pod_record, target_for
from exporter.engines.targets import EngineTarget
from exporter.exposition import Family
from exporter.sources.kube_connect import KubeConfigError, connect
from exporter.sources.kube_mirror import Mirror
from exporter.sources.kube_shared import shared


class DiscoveredTargets:
    """A BackgroundCollector + ReadyCollector: watches pods on this node and reports how fresh the view is."""

    name = "engine_discovery"

    def __init__(self, config: KubernetesDiscovery, kubeconfig: str | None) -> None:
        node = config.node_name or os.environ.get("NODE_NAME", "")
        if not node:
            raise ConfigError(["engines.kubernetes_discovery.node_name: not set and $NODE_NAME is empty"])
        self._config = config
        self._node = node
        self._pods: Mirror[PodRecord] | None = None
        self._error = ""
        try:
            api = connect(kubeconfig)
        except KubeConfigError as exc:
            self._error = str(exc)  # reported through collect(); engines from static targets keep working
            return
        prefix = config.annotation_prefix
        # a view of the node role's one watch of this node's pods: the GPU pod directory reads it too
        self._pods = shared(api, "pods", field_selector=f"spec.nodeName={node}").view(
            lambda obj: pod_record(obj, prefix)
        )

    def start(self) -> None:
        if self._pods is not None:
            self._pods.start()

    def close(self) -> None:
        if self._pods is not None:
            self._pods.stop()

    def ready(self) -> bool:
        return self._pods is None or self._pods.synced()

    def pods(self) -> list[PodRecord]:
        """The opted-in pods on this node (none before the watch started)."""
        return [] if self._pods is None else list(self._pods.items().values())

    def targets(self) -> list[EngineTarget]:
        found = (target_for(pod, self._config) for pod in self.pods())
        return [t for t in found if t is not None]

    def collect(self) -> list[Family]:
        if self._pods is None:
            raise CollectorUnavailable(self._error or "not started")
        synced = Family(cluster.LAST_SYNC)
        stamp = self._pods.last_sync_timestamp()
        if stamp is not None:
            synced.add((), stamp)
        return [synced]
