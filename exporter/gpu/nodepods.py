"""This node's pods from the API server (a watch with `spec.nodeName`), named by UID for process attribution.

The node role's service account already lists and watches pods. Without a Kubernetes configuration (not
in a cluster) the directory reports None and per-pod memory is unavailable; the GPU metrics still flow.
"""

from __future__ import annotations

import logging

from exporter.gpu.processes import PodNames, pod_names
from exporter.sources.kube_connect import KubeConfigError, connect
from exporter.sources.kube_reflector import Reflector

log = logging.getLogger(__name__)


class NodePods:
    def __init__(self, node: str, kubeconfig: str | None) -> None:
        self._node = node
        self._kubeconfig = kubeconfig
        self._reflector: Reflector[PodNames] | None = None

    def start(self) -> None:
        if self._reflector is not None or not self._node:
            return
        try:
            api = connect(self._kubeconfig)
        except KubeConfigError as exc:
            log.info("GPU memory per pod unavailable: %s", exc)
            return
        self._reflector = Reflector(api, "pods", transform=pod_names, field_selector=f"spec.nodeName={self._node}")
        self._reflector.start()

    def close(self) -> None:
        if self._reflector is not None:
            self._reflector.stop()

    def pods(self) -> list[PodNames] | None:
        if self._reflector is None or not self._reflector.available():
            return None
        return list(self._reflector.items().values())
