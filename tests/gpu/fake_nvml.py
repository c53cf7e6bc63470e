"""A fake `Nvml` (the seam in exporter/sources/nvml.py): GPUs described as data, errors injected per call."""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from exporter.sources.nvml import (
    EVENT_XID_CRITICAL,
    GPM_DRAM_BW_UTIL,
    GPM_SM_OCCUPANCY,
    Event,
    EventSet,
    Handle,
    MemoryV1,
    MemoryV2,
    NvmlError,
    NvmlErrorKind,
    Process,
    RemappedRows,
    Sample,
    Utilization,
)

GIB = 1 << 30
MIB = 1 << 20


@dataclass
class FakeMig:
    uuid: str
    gpu_instance_id: int
    compute_instance_id: int = 0
    memory: MemoryV2 = field(default_factory=lambda: MemoryV2(20 * GIB, 0, 15 * GIB, 5 * GIB))
    gpm_values: dict[int, float] = field(default_factory=lambda: {GPM_DRAM_BW_UTIL: 20.0, GPM_SM_OCCUPANCY: 10.0})
    processes: list[Process] = field(default_factory=list)
    errors: dict[str, NvmlErrorKind] = field(default_factory=dict)


@dataclass
class FakeGpu:
    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    memory: MemoryV2 = field(
        default_factory=lambda: MemoryV2(80 * GIB, 512 * MIB, 80 * GIB - 512 * MIB - 10 * GIB, 10 * GIB)
    )
    utilization: Utilization = field(default_factory=lambda: Utilization(gpu=75, memory=40))
    power_mw: int = 350_500
    temperature: int = 61
    energy_mj: int = 123_456_789
    mem_clock_mhz: int = 2619
    bus_width_bits: int = 5120
    gpm: bool = True
    gpm_values: dict[int, float] = field(default_factory=lambda: {GPM_DRAM_BW_UTIL: 42.5, GPM_SM_OCCUPANCY: 30.25})
    mig: bool = False
    mig_slots: list[FakeMig | None] = field(default_factory=list)  # None: an empty slot
    ecc: tuple[int, int] = (0, 0)  # aggregate corrected, uncorrected
    remapped: RemappedRows = field(default_factory=lambda: RemappedRows(0, 0, pending=False, failure=False))
    retired: tuple[int, int] | None = None  # single-bit, double-bit pages; None: not supported (Ampere on)
    processes: list[Process] = field(default_factory=list)
    xid_events: bool = True  # the driver offers XID events for this GPU
    errors: dict[str, NvmlErrorKind] = field(default_factory=dict)  # method name → error it raises
    lost: bool = False


@dataclass
class FakeSample:
    device: object = None
    taken: int = 0
    freed: bool = False


class FakeNvml:
    def __init__(self, gpus: Sequence[FakeGpu], *, driver: str = "550.54.15", init_error: NvmlErrorKind | None = None):
        self.gpus = list(gpus)
        self.driver = driver
        self.init_error = init_error
        self.count_error: NvmlErrorKind | None = None  # injected mid-run: the driver went away, or a hiccup
        self.calls: Counter[str] = Counter()
        self.samples: list[FakeSample] = []
        self.initialised = False
        self.events: queue.Queue[tuple[FakeGpu, int]] = queue.Queue()  # (GPU, XID) delivered on demand
        self.registered: list[FakeGpu] = []
        self.hang = threading.Event()  # while set, nvmlEventSetWait does not return (a hung driver)

    def xid(self, gpu: FakeGpu, number: int) -> None:
        """The driver reports XID `number` on `gpu` (delivered to a set that registered it)."""
        self.events.put((gpu, number))

    # -- helpers
    def _dev(self, handle: Handle, method: str) -> FakeGpu | FakeMig:
        self.calls[method] += 1
        dev = handle
        assert isinstance(dev, FakeGpu | FakeMig)
        if isinstance(dev, FakeGpu) and dev.lost:
            raise NvmlError(NvmlErrorKind.GPU_LOST, method)
        if method in dev.errors:
            raise NvmlError(dev.errors[method], method)
        return dev

    def _gpu(self, handle: Handle, method: str) -> FakeGpu:
        dev = self._dev(handle, method)
        assert isinstance(dev, FakeGpu), f"{method} called on a MIG handle"
        return dev

    # -- Nvml
    def init(self) -> None:
        self.calls["init"] += 1
        if self.init_error is not None:
            raise NvmlError(self.init_error, "nvmlInit")
        self.initialised = True

    def shutdown(self) -> None:
        self.calls["shutdown"] += 1
        self.initialised = False

    def driver_version(self) -> str:
        return self.driver

    def device_count(self) -> int:
        assert self.initialised
        if self.count_error is not None:
            raise NvmlError(self.count_error, "nvmlDeviceGetCount")
        return len(self.gpus)

    def handle_by_index(self, index: int) -> Handle:
        gpu = self.gpus[index]
        if "handle_by_index" in gpu.errors:
            raise NvmlError(gpu.errors["handle_by_index"], "handle_by_index")
        return Handle(gpu)

    def uuid(self, handle: Handle) -> str:
        return self._dev(handle, "uuid").uuid

    def name(self, handle: Handle) -> str:
        return self._gpu(handle, "name").name

    def memory_v2(self, handle: Handle) -> MemoryV2:
        return self._dev(handle, "memory_v2").memory

    def memory_v1(self, handle: Handle) -> MemoryV1:
        m = self._dev(handle, "memory_v1").memory
        return MemoryV1(m.total, m.free, m.used + m.reserved)

    def utilization(self, handle: Handle) -> Utilization:
        gpu = self._gpu(handle, "utilization")
        if gpu.mig:
            raise NvmlError(NvmlErrorKind.NOT_SUPPORTED, "utilization in MIG mode")
        return gpu.utilization

    def power_milliwatts(self, handle: Handle) -> int:
        return self._gpu(handle, "power_milliwatts").power_mw

    def temperature_celsius(self, handle: Handle) -> int:
        return self._gpu(handle, "temperature_celsius").temperature

    def temperature_celsius_legacy(self, handle: Handle) -> int:
        return self._gpu(handle, "temperature_celsius_legacy").temperature

    def energy_millijoules(self, handle: Handle) -> int:
        return self._gpu(handle, "energy_millijoules").energy_mj

    def max_memory_clock_mhz(self, handle: Handle) -> int:
        return self._gpu(handle, "max_memory_clock_mhz").mem_clock_mhz

    def memory_bus_width_bits(self, handle: Handle) -> int:
        return self._gpu(handle, "memory_bus_width_bits").bus_width_bits

    def mig_mode(self, handle: Handle) -> bool:
        return self._gpu(handle, "mig_mode").mig

    def max_mig_device_count(self, handle: Handle) -> int:
        return len(self._gpu(handle, "max_mig_device_count").mig_slots)

    def mig_device_by_index(self, handle: Handle, index: int) -> Handle:
        mig = self._gpu(handle, "mig_device_by_index").mig_slots[index]
        if mig is None:
            raise NvmlError(NvmlErrorKind.NOT_FOUND, "empty MIG slot")
        return Handle(mig)

    def gpu_instance_id(self, handle: Handle) -> int:
        dev = self._dev(handle, "gpu_instance_id")
        assert isinstance(dev, FakeMig)
        return dev.gpu_instance_id

    def compute_instance_id(self, handle: Handle) -> int:
        dev = self._dev(handle, "compute_instance_id")
        assert isinstance(dev, FakeMig)
        return dev.compute_instance_id

    def gpm_supported(self, handle: Handle) -> bool:
        return self._gpu(handle, "gpm_supported").gpm

    def gpm_sample_alloc(self) -> Sample:
        self.calls["gpm_sample_alloc"] += 1
        sample = FakeSample()
        self.samples.append(sample)
        return Sample(sample)

    def gpm_sample_free(self, sample: Sample) -> None:
        assert isinstance(sample, FakeSample) and not sample.freed, "double free"
        sample.freed = True

    def gpm_sample_get(self, handle: Handle, sample: Sample) -> None:
        gpu = self._gpu(handle, "gpm_sample_get")
        assert isinstance(sample, FakeSample) and not sample.freed
        sample.device, sample.taken = gpu, self.calls["gpm_sample_get"]

    def gpm_mig_sample_get(self, parent: Handle, gpu_instance_id: int, sample: Sample) -> None:
        gpu = self._gpu(parent, "gpm_mig_sample_get")
        assert isinstance(sample, FakeSample) and not sample.freed
        (mig,) = [m for m in gpu.mig_slots if m is not None and m.gpu_instance_id == gpu_instance_id]
        sample.device, sample.taken = mig, self.calls["gpm_mig_sample_get"]

    def gpm_metrics(self, first: Sample, second: Sample, ids: Sequence[int]) -> dict[int, float | NvmlError]:
        self.calls["gpm_metrics"] += 1
        assert isinstance(first, FakeSample) and isinstance(second, FakeSample)
        assert first.device is second.device and first.device is not None, "samples of different devices"
        assert not first.freed and not second.freed
        values = first.device.gpm_values  # type: ignore[attr-defined]
        return {i: values[i] if i in values else NvmlError(NvmlErrorKind.NOT_SUPPORTED, str(i)) for i in ids}

    def live_samples(self) -> int:
        return sum(not s.freed for s in self.samples)

    def ecc_errors(self, handle: Handle, *, uncorrected: bool) -> int:
        return self._gpu(handle, "ecc_errors").ecc[1 if uncorrected else 0]

    def remapped_rows(self, handle: Handle) -> RemappedRows:
        return self._gpu(handle, "remapped_rows").remapped

    def retired_pages(self, handle: Handle, *, double_bit: bool) -> int:
        gpu = self._gpu(handle, "retired_pages")
        if gpu.retired is None:
            raise NvmlError(NvmlErrorKind.NOT_SUPPORTED, "retired pages")
        return gpu.retired[1 if double_bit else 0]

    def compute_processes(self, handle: Handle) -> list[Process]:
        return list(self._dev(handle, "compute_processes").processes)

    def supported_event_types(self, handle: Handle) -> int:
        return EVENT_XID_CRITICAL if self._gpu(handle, "supported_event_types").xid_events else 0

    def event_set_create(self) -> EventSet:
        self.calls["event_set_create"] += 1
        self.registered = []
        return EventSet(self.registered)

    def register_events(self, handle: Handle, event_types: int, event_set: EventSet) -> None:
        gpu = self._gpu(handle, "register_events")
        current: object = self.registered
        assert event_set is current and event_types == EVENT_XID_CRITICAL
        self.registered.append(gpu)

    def event_set_wait(self, event_set: EventSet, timeout_ms: int) -> Event | None:
        self.calls["event_set_wait"] += 1
        while self.hang.is_set():
            time.sleep(0.01)
        if self.count_error is not None:
            raise NvmlError(self.count_error, "nvmlEventSetWait")
        try:
            gpu, number = self.events.get(timeout=timeout_ms / 1000)
        except queue.Empty:
            return None
        assert gpu in self.registered, "an event of a GPU that was not registered"
        return Event(Handle(gpu), EVENT_XID_CRITICAL, number)

    def event_set_free(self, event_set: EventSet) -> None:
        self.calls["event_set_free"] += 1
