"""Soak: the node role over HTTP for a thousand scrapes while its sources flap; memory and threads stay flat."""

from __future__ import annotations

import threading
import tracemalloc
import urllib.request

from exporter.collect import CollectorSet
from exporter.config import Engines, Target
from exporter.engines.collector import EngineCollector
from exporter.gpu.collector import GpuCollector
from tests.core.serving import serving
from tests.engines.engine_servers import engine_server, recorded
from tests.gpu.fake_nvml import FakeGpu, FakeNvml

WARM_UP, MEASURED, EVERY = 100, 400, 100
MODES = ("ok", "500", "garbage", "ok", "ok")  # the flapping target's answer, in turn


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def test_memory_and_threads_stay_flat_while_sources_flap() -> None:
    body = recorded("0.32.0")
    with engine_server("ok") as gone:  # only reserves a port, closed below: a target refusing connections
        closed = gone.url
    with engine_server("ok", body) as steady, engine_server("ok", body) as flapping:
        gpus = [FakeGpu(uuid="GPU-0"), FakeGpu(uuid="GPU-1")]
        config = Engines(
            timeout_seconds=1.0,
            targets=[
                Target(url=steady.url, labels={"namespace": "soak", "pod": "steady"}),
                Target(url=flapping.url, labels={"namespace": "soak", "pod": "flapping"}),
                Target(url=closed, labels={"namespace": "soak", "pod": "gone"}),
            ],
        )
        collectors = CollectorSet([EngineCollector(config), GpuCollector(FakeNvml(gpus), node="gpu-node-0")])
        traced: list[int] = []  # the lowest traced memory of each window of EVERY scrapes
        window: list[int] = []
        try:
            with serving(collectors) as port:
                url = f"http://127.0.0.1:{port}/metrics"
                threads_before = 0
                for i in range(WARM_UP + MEASURED + 1):
                    flapping.mode = MODES[i % len(MODES)]
                    gpus[1].lost = i % 7 == 0
                    steady.body = body.replace("vllm:num_requests_running{", f'vllm:num_requests_running{{x="{i % 3}",')
                    text = get(url)
                    assert 'pod="steady",engine="vllm"} 1' in text and 'pod="gone",engine="unknown"} 0' in text
                    steady.requested.clear()  # the fakes' own log of requests is the test's memory, not ours
                    flapping.requested.clear()
                    if i == WARM_UP:
                        threads_before = threading.active_count()
                        tracemalloc.start()
                    elif i > WARM_UP:
                        window.append(tracemalloc.get_traced_memory()[0])
                        if len(window) == EVERY:
                            traced.append(min(window))
                            window.clear()
                threads_after = threading.active_count()
        finally:
            tracemalloc.stop()
    # every scrape replaces the previous one's data; what stays allocated must not grow with scrapes. One reading
    # is what stays plus whatever a scrape still holds at that instant (a body, a rendered page: up to ~200 kB
    # here), so each figure is the lowest reading of its window of scrapes: what stays.
    assert len(traced) == MEASURED // EVERY
    growth = traced[-1] - traced[0]
    assert growth < 256 * 1024, f"traced memory grew by {growth} bytes over {MEASURED - EVERY} scrapes: {traced}"
    assert abs(threads_after - threads_before) <= 2, (threads_before, threads_after)
