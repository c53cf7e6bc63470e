"""The kubelet PodResources gRPC API (`v1.PodResourcesLister`) on its unix socket: which container holds
which device. The only module that talks gRPC.

The socket is root-only and is recreated when the kubelet restarts (mount its directory, not the file). The
channel is dropped after any failure so the next call dials the new socket instead of waiting out gRPC's
reconnect backoff. The kubelet rate-limits this API (100 QPS, burst 10): callers poll it, not per scrape.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from exporter.sources._generated.podresources_v1 import podresources_pb2 as pb

LIST_METHOD = "/v1.PodResourcesLister/List"
MAX_MESSAGE_BYTES = 16 << 20  # a node with hundreds of pods exceeds gRPC's 4 MiB default


class PodResourcesUnavailableError(Exception):
    """No pod-resources socket at the configured path (not a Kubernetes node, or not mounted)."""


class PodResourcesError(Exception):
    """The kubelet did not answer `List` (rate limit, timeout, kubelet restarting)."""


@dataclass(frozen=True, slots=True)
class ContainerDevices:
    """The devices of one resource assigned to one container."""

    namespace: str
    pod: str
    container: str
    resource_name: str
    device_ids: tuple[str, ...]


class PodResourcesClient:
    def __init__(self, socket_path: str, timeout_seconds: float = 5.0) -> None:
        self.socket_path = socket_path
        self._timeout = timeout_seconds
        self._lock = threading.Lock()
        self._channel: grpc.Channel | None = None
        self._list: Callable[..., Any] | None = None

    def list(self) -> list[ContainerDevices]:
        """Every device-plugin device assigned to a container on this node."""
        if not os.path.exists(self.socket_path):
            self.close()
            raise PodResourcesUnavailableError(f"no pod-resources socket at {self.socket_path}")
        call = self._stub()
        try:
            response = call(pb.ListPodResourcesRequest(), timeout=self._timeout)
        except grpc.RpcError as exc:
            self.close()
            code = exc.code() if isinstance(exc, grpc.Call) else None
            details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
            raise PodResourcesError(f"List on {self.socket_path}: {getattr(code, 'name', code)}: {details}") from exc
        return [
            ContainerDevices(pod.namespace, pod.name, container.name, devices.resource_name, tuple(devices.device_ids))
            for pod in response.pod_resources
            for container in pod.containers
            for devices in container.devices
        ]

    def _stub(self) -> Callable[..., Any]:
        with self._lock:
            if self._list is None:
                self._channel = grpc.insecure_channel(
                    f"unix://{self.socket_path}",
                    options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)],
                )
                # a plain unary method instead of generated service stubs: those pin the grpcio version
                self._list = self._channel.unary_unary(
                    LIST_METHOD,
                    request_serializer=pb.ListPodResourcesRequest.SerializeToString,
                    response_deserializer=pb.ListPodResourcesResponse.FromString,
                )
            return self._list

    def close(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
            self._channel = None
            self._list = None
