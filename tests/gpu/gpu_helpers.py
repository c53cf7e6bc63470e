"""Shared helpers of the GPU tests: fake clock, golden files, the two-GPU fake node."""

from __future__ import annotations

from pathlib import Path

from exporter.gpu.collector import GpuCollector
from exporter.gpu.gpm import GpmSampler
from exporter.gpu.xid import XidWatcher
from tests import golden
from tests.gpu.fake_nvml import FakeGpu, FakeNvml

GOLDEN = Path(__file__).parent / "golden"
NODE = "gpu-node-0"  # $NODE_NAME of the fake node

UUID0 = "GPU-11111111-2222-3333-4444-000000000000"
UUID1 = "GPU-11111111-2222-3333-4444-000000000001"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class StepXid(XidWatcher):
    """The XID watcher without its thread: `start` registers the GPUs at once and the test calls `poll`, so a
    scrape's XID series are deterministic (the thread itself is tested in test_gpu_xid.py)."""

    def start(self) -> None:
        self.setup()


def make_collector(nvml: FakeNvml, clock: Clock, *, required: bool = False) -> GpuCollector:
    sampler = GpmSampler(nvml, clock=clock)
    xid = StepXid(nvml, ready=lambda: nvml.initialised, wait_ms=0, stall_seconds=float("inf"), clock=clock)
    return GpuCollector(nvml, node=NODE, required=required, sampler=sampler, xid=xid, clock=clock)


def two_gpus() -> list[FakeGpu]:
    a100 = FakeGpu(UUID1, name="NVIDIA A100-SXM4-80GB", mem_clock_mhz=1593, gpm=False, temperature=55, power_mw=90_000)
    return [FakeGpu(UUID0), a100]


def read_golden(name: str) -> str:
    return (GOLDEN / name).read_text()


def assert_golden(name: str, text: str) -> None:
    """`text` equals golden/<name>; UPDATE_GOLDEN=1 rewrites the file instead (review the diff)."""
    golden.check(GOLDEN / name, text)
