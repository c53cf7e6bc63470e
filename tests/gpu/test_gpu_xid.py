"""XID errors through the event thread (exporter/gpu/xid.py) against the fake NVML: counts per GPU and XID,
GPUs without events reported unavailable, a hung event wait that never stalls a scrape, NVML lost mid-run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from exporter.exposition import render
from exporter.gpu.collector import GpuCollector
from exporter.gpu.gpm import GpmSampler
from exporter.gpu.xid import XidWatcher
from exporter.sources.nvml import NvmlErrorKind
from tests.gpu.fake_nvml import FakeNvml
from tests.gpu.gpu_helpers import NODE, UUID0, UUID1, two_gpus

GPU0 = f'node="{NODE}",gpu="0",uuid="{UUID0}"'
GPU1 = f'node="{NODE}",gpu="1",uuid="{UUID1}"'


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def xid_lines(collector: GpuCollector) -> set[str]:
    text = render(collector.collect())
    return {x for x in text.splitlines() if x.startswith("llm_gpu_xid") or 'field="xid_errors"' in x}


@pytest.fixture
def node() -> Iterator[tuple[FakeNvml, XidWatcher, GpuCollector]]:
    gpus = two_gpus()
    gpus[1].xid_events = False  # the A100's driver offers no XID events here
    nvml = FakeNvml(gpus)
    watcher = XidWatcher(nvml, ready=lambda: nvml.initialised, wait_ms=20, retry_seconds=0.05, stall_seconds=0.5)
    collector = GpuCollector(nvml, node=NODE, sampler=GpmSampler(nvml), xid=watcher)
    collector.start()
    wait_for(lambda: watcher.view().state(UUID0) is None)
    yield nvml, watcher, collector
    nvml.hang.clear()
    collector.close()


def test_xids_are_counted_per_gpu_and_number_and_a_gpu_without_events_is_unavailable(
    node: tuple[FakeNvml, XidWatcher, GpuCollector],
) -> None:
    nvml, watcher, collector = node
    unsupported = f'llm_gpu_field_unavailable{{{GPU1},field="xid_errors",reason="not_supported"}} 1'
    assert xid_lines(collector) == {unsupported}  # watched, none yet: no series, and never a 0 for GPU 1
    for number in (79, 13, 79):
        nvml.xid(nvml.gpus[0], number)
    wait_for(lambda: sum(watcher.view().counts.values()) == 3)
    assert xid_lines(collector) == {
        f'llm_gpu_xid_errors_total{{{GPU0},xid="13"}} 1',
        f'llm_gpu_xid_errors_total{{{GPU0},xid="79"}} 2',
        unsupported,
    }


def test_a_hung_event_wait_marks_the_field_timed_out_and_never_holds_a_scrape(
    node: tuple[FakeNvml, XidWatcher, GpuCollector],
) -> None:
    nvml, watcher, collector = node
    nvml.xid(nvml.gpus[0], 48)
    wait_for(lambda: sum(watcher.view().counts.values()) == 1)
    nvml.hang.set()
    wait_for(lambda: watcher.view().state(UUID0) is NvmlErrorKind.TIMEOUT)
    assert xid_lines(collector) == {  # the scrape answers while the wait hangs; the count seen still stands
        f'llm_gpu_xid_errors_total{{{GPU0},xid="48"}} 1',
        f'llm_gpu_field_unavailable{{{GPU0},field="xid_errors",reason="timeout"}} 1',
        f'llm_gpu_field_unavailable{{{GPU1},field="xid_errors",reason="not_supported"}} 1',
    }
    nvml.hang.clear()
    wait_for(lambda: watcher.view().state(UUID0) is None)


def test_nvml_lost_mid_run_registers_again_and_keeps_the_counts(
    node: tuple[FakeNvml, XidWatcher, GpuCollector],
) -> None:
    nvml, watcher, _collector = node
    nvml.xid(nvml.gpus[0], 31)
    wait_for(lambda: sum(watcher.view().counts.values()) == 1)
    creates = nvml.calls["event_set_create"]
    nvml.count_error = NvmlErrorKind.UNAVAILABLE  # the wait fails as the driver goes away
    wait_for(lambda: watcher.view().state(UUID0) is NvmlErrorKind.UNAVAILABLE)
    nvml.count_error = None
    wait_for(lambda: nvml.calls["event_set_create"] > creates and watcher.view().state(UUID0) is None)
    nvml.xid(nvml.gpus[0], 31)
    wait_for(lambda: watcher.view().counts == {(UUID0, 31): 2})
    assert nvml.calls["event_set_free"] >= 1


def test_a_registration_the_driver_refuses_is_reported_with_its_reason() -> None:
    gpus = two_gpus()
    gpus[0].errors["register_events"] = NvmlErrorKind.NO_PERMISSION
    nvml = FakeNvml(gpus)
    nvml.init()
    watcher = XidWatcher(nvml, ready=lambda: nvml.initialised)
    assert watcher.setup()
    view = watcher.view()
    assert (view.state(UUID0), view.state(UUID1)) == (NvmlErrorKind.NO_PERMISSION, None)
    watcher.close()
    assert nvml.calls["event_set_free"] == 1
