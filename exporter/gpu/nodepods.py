"""This node's pods from the API server (a watch with `spec.nodeName`), named by UID for process attribution.

The node role's service account already lists and watches pods. Without a Kubernetes configuration (not
in a cluster) the directory reports None and per-pod memory is unavailable; the GPU metrics still flow.
"""

from __future__ import annotations

import logging

from exporter.gpu.processes import PodNames, pod_names
from exporter.sources.kube_connect import KubeConfigError, connect
from exporter.sources.kube_mirror import Mirror
from exporter.sources.kube_shared import shared

log = logging.getLogger(__name__)


class NodePods:
    """This node's pods by UID: a view of the node role's one watch of its pods (engine discovery reads it too),
    made when built so that both join the same watch before it starts."""

    def __init__(self, node: str, kubeconfig: str | None) -> None:
        self._pods: Mirror[PodNames] | None = None
        if not node:
            return
        try:
            api = connect(kubeconfig)
        except KubeConfigError as exc:
            log.info("GPU memory per pod unavailable: %s", exc)
            return
        self._pods = shared(api, "pods", field_selector=f"spec.nodeName={node}").view(pod_names)

    def start(self) -> None:
        if self._pods is not None:
            self._pods.start()

    def close(self) -> None:
        if self._pods is not None:
            self._pods.stop()

    def pods(self) -> list[PodNames] | None:
        if self._pods is None or not self._pods.available():
            return None
        return list(self._pods.items().values())
