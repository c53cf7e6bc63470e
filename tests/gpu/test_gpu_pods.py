"""Pod attribution: the PodResources client against a real gRPC server on a unix socket, and the collector."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from exporter.collect import CollectorSet, CollectorUnavailable
from exporter.exposition import render
from exporter.gpu.pods import STALE_AFTER_REFRESHES, GpuPodsCollector
from exporter.sources._generated.podresources_v1 import podresources_pb2 as pb
from exporter.sources.podresources import (
    ContainerDevices,
    PodResourcesClient,
    PodResourcesError,
    PodResourcesUnavailableError,
)
from tests.gpu.gpu_helpers import NODE, UUID0, UUID1, Clock


def _pod(namespace: str, name: str, containers: list[tuple[str, list[tuple[str, list[str]]]]]) -> pb.PodResources:
    return pb.PodResources(
        namespace=namespace,
        name=name,
        containers=[
            pb.ContainerResources(
                name=cname,
                devices=[pb.ContainerDevices(resource_name=r, device_ids=ids) for r, ids in devices],
                cpu_ids=[2, 3],
            )
            for cname, devices in containers
        ],
    )


class FakeKubelet:
    """`v1.PodResourcesLister/List` on a unix socket, the way the kubelet serves it."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.pods: list[pb.PodResources] = []
        self.fail_with: grpc.StatusCode | None = None
        self.calls = 0
        self._server: Any = None

    def _list(self, request: pb.ListPodResourcesRequest, context: grpc.ServicerContext) -> pb.ListPodResourcesResponse:
        self.calls += 1
        if self.fail_with is not None:
            context.abort(self.fail_with, "rejected by rate limit")
        return pb.ListPodResourcesResponse(pod_resources=self.pods)

    def start(self) -> None:
        handler = grpc.method_handlers_generic_handler(
            "v1.PodResourcesLister",
            {
                "List": grpc.unary_unary_rpc_method_handler(
                    self._list,
                    request_deserializer=pb.ListPodResourcesRequest.FromString,
                    response_serializer=pb.ListPodResourcesResponse.SerializeToString,
                )
            },
        )
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self._server.add_generic_rpc_handlers((handler,))
        self._server.add_insecure_port(f"unix:{self.socket_path}")
        self._server.start()

    def stop(self) -> None:
        self._server.stop(grace=None).wait()
        Path(self.socket_path).unlink(missing_ok=True)


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="podres", dir="/tmp"))  # unix socket paths are limited to 108 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def kubelet(socket_dir: Path) -> Iterator[FakeKubelet]:
    server = FakeKubelet(str(socket_dir / "kubelet.sock"))
    server.pods = [
        _pod("ml", "llama-0", [("vllm", [("nvidia.com/gpu", [UUID0, UUID1])]), ("sidecar", [])]),
        _pod("ml", "shared-0", [("app", [("nvidia.com/gpu.shared", [f"{UUID1}::3"])])]),
        _pod("kube-system", "cpu-only", [("c", [])]),
    ]
    server.start()
    yield server
    server.stop()


def test_client_lists_container_devices(kubelet: FakeKubelet) -> None:
    client = PodResourcesClient(kubelet.socket_path)
    try:
        assert client.list() == [
            ContainerDevices("ml", "llama-0", "vllm", "nvidia.com/gpu", (UUID0, UUID1)),
            ContainerDevices("ml", "shared-0", "app", "nvidia.com/gpu.shared", (f"{UUID1}::3",)),
        ]
    finally:
        client.close()


def test_client_without_socket_is_unavailable(socket_dir: Path) -> None:
    client = PodResourcesClient(str(socket_dir / "absent.sock"))
    with pytest.raises(PodResourcesUnavailableError, match="no pod-resources socket"):
        client.list()


def test_client_reports_the_kubelet_rate_limit(kubelet: FakeKubelet) -> None:
    kubelet.fail_with = grpc.StatusCode.RESOURCE_EXHAUSTED
    client = PodResourcesClient(kubelet.socket_path)
    with pytest.raises(PodResourcesError, match="RESOURCE_EXHAUSTED: rejected by rate limit"):
        client.list()
    kubelet.fail_with = None
    assert len(client.list()) == 2
    client.close()


def test_client_follows_a_kubelet_restart(kubelet: FakeKubelet) -> None:
    client = PodResourcesClient(kubelet.socket_path, timeout_seconds=2)
    assert len(client.list()) == 2
    kubelet.stop()
    with pytest.raises(PodResourcesUnavailableError):
        client.list()
    kubelet.pods = [_pod("ml", "new-0", [("c", [("nvidia.com/gpu", [UUID0])])])]
    kubelet.start()
    assert client.list() == [ContainerDevices("ml", "new-0", "c", "nvidia.com/gpu", (UUID0,))]
    client.close()


POD_INFO_TEXT = f"""\
# HELP llm_gpu_pod_info The pod container a GPU is assigned to, value 1.
# TYPE llm_gpu_pod_info gauge
llm_gpu_pod_info{{node="{NODE}",gpu="0",uuid="{UUID0}",namespace="ml",pod="llama-0",container="vllm"}} 1
llm_gpu_pod_info{{node="{NODE}",gpu="1",uuid="{UUID1}",namespace="ml",pod="llama-0",container="vllm"}} 1
llm_gpu_pod_info{{node="{NODE}",gpu="1",uuid="{UUID1}",namespace="ml",pod="shared-0",container="app"}} 1
"""


def test_pods_collector_refreshes_in_the_background(kubelet: FakeKubelet) -> None:
    devices = {UUID0: "0", UUID1: "1"}
    lister = PodResourcesClient(kubelet.socket_path)
    collector = GpuPodsCollector(lister, node=NODE, devices=lambda: devices, refresh_seconds=1)
    with pytest.raises(CollectorUnavailable, match="waiting for the first"):
        collector.collect()
    collector.start()
    try:
        deadline = time.monotonic() + 10
        while kubelet.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        calls = kubelet.calls
        for _ in range(20):  # scrapes never call the kubelet
            assert render(collector.collect()) == POD_INFO_TEXT
        assert kubelet.calls - calls <= 1  # at most the next 1 s refresh
    finally:
        collector.close()


class FakeLister:
    socket_path = "/fake.sock"

    def __init__(self) -> None:
        self.result: list[ContainerDevices] | Exception = []
        self.closed = False

    def list(self) -> list[ContainerDevices]:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result

    def close(self) -> None:
        self.closed = True


def test_pods_collector_serves_the_cache_through_short_failures_then_withdraws_it(clock: Clock) -> None:
    lister = FakeLister()
    lister.result = [ContainerDevices("ml", "p", "c", "nvidia.com/gpu", (UUID0,))]
    collector = GpuPodsCollector(lister, node=NODE, devices=lambda: {UUID0: "0"}, refresh_seconds=10, clock=clock)
    collector.refresh()
    expected = f'llm_gpu_pod_info{{node="{NODE}",gpu="0",uuid="{UUID0}",namespace="ml",pod="p",container="c"}} 1\n'
    assert render(collector.collect()).endswith(expected)
    lister.result = PodResourcesError("List: DEADLINE_EXCEEDED")
    clock.advance(10)
    collector.refresh()
    assert render(collector.collect()).endswith(expected)  # one missed refresh: the view still holds
    clock.advance(STALE_AFTER_REFRESHES * 10)
    collector.refresh()
    out = render(CollectorSet([collector]).collect())
    assert 'llm_exporter_collector_success{collector="gpu_pods"} 0' in out
    assert "llm_gpu_pod_info" not in out


def test_pods_collector_without_socket_is_unavailable_and_drops_the_old_view(clock: Clock) -> None:
    lister = FakeLister()
    lister.result = [ContainerDevices("ml", "p", "c", "nvidia.com/gpu", (UUID0,))]
    collector = GpuPodsCollector(lister, node=NODE, devices=dict, refresh_seconds=10, clock=clock)
    collector.refresh()
    lister.result = PodResourcesUnavailableError("no pod-resources socket at /fake.sock")
    collector.refresh()
    with pytest.raises(CollectorUnavailable, match="no pod-resources socket"):
        collector.collect()


def test_pods_collector_close_stops_its_thread(clock: Clock) -> None:
    lister = FakeLister()
    collector = GpuPodsCollector(lister, node=NODE, devices=dict, refresh_seconds=1)
    collector.start()
    collector.close()
    assert lister.closed
    assert not [t for t in threading.enumerate() if t.name == "gpu-pod-resources"]


def test_generated_podresources_module_matches_its_proto() -> None:
    from exporter.sources._generated import regenerate

    assert regenerate.main(["--check"]) == 0
