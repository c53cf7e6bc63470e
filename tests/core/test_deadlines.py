"""Collector deadlines: a hung source never stalls /metrics.

Hung for real: the real NVML bindings against the stub library blocking on demand, a real gRPC pod-resources
server that does not answer, an engine HTTP server that never replies; and the HTTP server taking its budget
from Prometheus' scrape-timeout header.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from exporter import negotiation
from exporter.catalogue import engine
from exporter.collect import CollectorSet
from exporter.config import Engines, Target
from exporter.engines.collector import EngineCollector
from exporter.exposition import Family, render
from exporter.gpu.pods import GpuPodsCollector
from exporter.sources._generated.podresources_v1 import podresources_pb2 as pb
from exporter.sources.podresources import PodResourcesClient
from tests.core.serving import serving
from tests.engines.engine_servers import engine_server
from tests.gpu import stub_nvml_build
from tests.gpu.test_gpu_pods import FakeKubelet, socket_dir  # noqa: F401 - socket_dir is a fixture

CHILD = Path(__file__).parent / "deadline_nvml_child.py"


class Answering:
    name = "answering"

    def collect(self) -> list[Family]:
        family = Family(engine.ENGINE_UP)
        family.add(("ns", "p", "vllm"), 1)
        return [family]


class Hanging:
    """A collector whose collect() waits on `release`; counts how many runs were started."""

    name = "hanging"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def collect(self) -> list[Family]:
        self.calls += 1
        self.release.wait(30)
        family = Family(engine.ENGINE_UP)
        family.add(("ns", "late", "vllm"), 1)
        return [family]


ANSWERED = 'llm_engine_up{namespace="ns",pod="p",engine="vllm"} 1'


def test_a_hung_collector_times_out_alone_and_is_never_doubled() -> None:
    hanging = Hanging()
    collectors = CollectorSet([hanging, Answering()])
    try:
        for scrape in (1, 2, 3):
            start = time.monotonic()
            text = render(collectors.collect(0.2))
            assert time.monotonic() - start < 1.0
            assert ANSWERED in text
            assert 'llm_exporter_collector_success{collector="hanging"} 0' in text
            assert f'llm_exporter_collector_timeouts_total{{collector="hanging"}} {scrape}' in text
            assert 'llm_exporter_collector_timeouts_total{collector="answering"} 0' in text
            assert 'pod="late"' not in text
        assert hanging.calls == 1  # one run in flight, waited on by every later scrape
        assert collectors.in_flight() == ["hanging"]
        hanging.release.set()
        text = render(collectors.collect(0.2))  # the in-flight run answers within this scrape's deadline
        assert 'llm_exporter_collector_success{collector="hanging"} 1' in text
        assert 'pod="late"' in text
        assert collectors.in_flight() == []
    finally:
        hanging.release.set()


def test_a_blocking_nvml_call(tmp_path: Path) -> None:
    lib = stub_nvml_build.build(tmp_path / "stub")["full"]
    block = tmp_path / "block"
    done = subprocess.run(
        [sys.executable, str(CHILD), str(block)],
        env=stub_nvml_build.env_for(lib, gpus="2", block_file=str(block)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert 'llm_exporter_collector_success{collector="gpu"} 1' in out["before"]["text"]
    assert "llm_gpu_memory_used_bytes{" in out["before"]["text"]
    for name, timeouts in (("blocked", 1), ("still_blocked", 2)):
        text = out[name]["text"]
        assert out[name]["seconds"] < 1.5, name
        assert 'llm_exporter_collector_success{collector="gpu"} 0' in text
        assert f'llm_exporter_collector_timeouts_total{{collector="gpu"}} {timeouts}' in text
        assert "llm_gpu_memory_used_bytes{" not in text
        assert ANSWERED in text
        assert out[name]["gpu_threads"] == 1  # the hung NVML call holds one thread, not one per scrape
    assert out["in_flight"]["names"] == ["gpu"]
    assert 'llm_exporter_collector_success{collector="gpu"} 1' in out["after"]["text"]
    assert "llm_gpu_memory_used_bytes{" in out["after"]["text"]
    assert 'llm_exporter_collector_timeouts_total{collector="gpu"} 2' in out["after"]["text"]


def get_metrics(port: int, scrape_timeout: str) -> tuple[str, float]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/metrics", headers={negotiation.SCRAPE_TIMEOUT_HEADER: scrape_timeout}
    )
    start = time.monotonic()
    with urllib.request.urlopen(request, timeout=20) as response:
        return response.read().decode(), time.monotonic() - start


def test_a_slow_engine_past_the_scrape_budget_prometheus_sent() -> None:
    with engine_server("hang") as hung:
        engines = EngineCollector(Engines(timeout_seconds=10, targets=[Target(hung.url, {"pod": "hung"})]))
        with serving(CollectorSet([engines, Answering()])) as port:
            text, took = get_metrics(port, "1.5")  # Prometheus' scrape_timeout: 1.5 s
    assert took < 2.0
    assert 'llm_exporter_collector_success{collector="engines"} 0' in text
    assert 'llm_exporter_collector_timeouts_total{collector="engines"} 1' in text
    assert ANSWERED in text


class SlowKubelet(FakeKubelet):
    """A kubelet whose pod-resources `List` answers only when released."""

    def __init__(self, socket_path: str) -> None:
        super().__init__(socket_path)
        self.release = threading.Event()

    def _list(self, request: pb.ListPodResourcesRequest, context: grpc.ServicerContext) -> pb.ListPodResourcesResponse:
        self.release.wait(30)
        return super()._list(request, context)


@pytest.fixture
def slow_kubelet(socket_dir: Path) -> Iterator[SlowKubelet]:  # noqa: F811 - the imported fixture
    kubelet = SlowKubelet(str(socket_dir / "kubelet.sock"))
    kubelet.start()
    yield kubelet
    kubelet.release.set()
    kubelet.stop()


def test_a_slow_pod_resources_socket_never_stalls_a_scrape(slow_kubelet: SlowKubelet) -> None:
    pods = GpuPodsCollector(
        PodResourcesClient(slow_kubelet.socket_path, timeout_seconds=20), node="gpu-node-1", devices=dict
    )
    with serving(CollectorSet([pods, Answering()])) as port:
        time.sleep(0.2)  # the background refresh is now stuck in List
        text, took = get_metrics(port, "2")
        assert took < 1.0
        assert ANSWERED in text
        assert 'llm_exporter_collector_success{collector="gpu_pods"} 0' in text  # no view yet: not served
        assert 'llm_exporter_collector_timeouts_total{collector="gpu_pods"} 0' in text  # the scrape never waited
        slow_kubelet.release.set()
        deadline = time.monotonic() + 10
        while 'llm_exporter_collector_success{collector="gpu_pods"} 1' not in text and time.monotonic() < deadline:
            time.sleep(0.1)
            text, _ = get_metrics(port, "2")
        assert 'llm_exporter_collector_success{collector="gpu_pods"} 1' in text


@pytest.mark.parametrize(
    ("header", "budget"),
    [(None, None), ("", None), ("ten", None), ("nan", None), ("-1", None), ("10", 9.5), ("1", 0.75), ("0.01", 0.05)],
)
def test_the_budget_read_from_prometheus_scrape_timeout(header: str | None, budget: float | None) -> None:
    assert negotiation.scrape_budget(header) == budget


class Slow:
    """Answers after `seconds`; declares its own deadline."""

    def __init__(self, name: str, seconds: float, deadline_seconds: float | None = None) -> None:
        self.name = name
        self.seconds = seconds
        if deadline_seconds is not None:
            self.deadline_seconds = deadline_seconds

    def collect(self) -> list[Family]:
        time.sleep(self.seconds)
        return []


def test_a_collector_s_own_deadline_applies_inside_the_budget() -> None:
    collectors = CollectorSet([Slow("tight", 0.5, deadline_seconds=0.1), Slow("loose", 0.5), Answering()])
    start = time.monotonic()
    text = render(collectors.collect(2.0))
    assert time.monotonic() - start < 1.5  # concurrently: not 0.1 + 0.5
    assert 'llm_exporter_collector_timeouts_total{collector="tight"} 1' in text
    assert 'llm_exporter_collector_success{collector="loose"} 1' in text
    text = render(collectors.collect(0.1))  # and the budget caps a longer own deadline
    assert 'llm_exporter_collector_success{collector="loose"} 0' in text
