"""NVML through the official `nvidia-ml-py` bindings (`import pynvml`): the only module that imports them.

Every call returns plain Python values or small dataclasses and raises `NvmlError` with a `kind` that the
collector can act on (skip one field, mark one GPU lost, report the whole source unavailable), so nothing
above this module sees a pynvml type or exception. Handles are opaque `Handle` objects.

`Nvml` is the seam: the collector depends on this protocol, tests use a fake that implements it.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NewType, Protocol, TypeVar

Handle = NewType("Handle", object)  # an NVML device handle (whole GPU or MIG instance)
Sample = NewType("Sample", object)  # a GPM sample buffer
EventSet = NewType("EventSet", object)  # an NVML event set

GPM_DRAM_BW_UTIL = 10  # NVML_GPM_METRIC_DRAM_BW_UTIL: % of theoretical DRAM bandwidth
GPM_SM_OCCUPANCY = 3  # NVML_GPM_METRIC_SM_OCCUPANCY: % of active warps vs the theoretical maximum
EVENT_XID_CRITICAL = 0x8  # nvmlEventTypeXidCriticalError: eventData is the XID number


class NvmlErrorKind(enum.StrEnum):
    """What an NVML failure means for the caller; the value is the `reason` label of the metrics."""

    NOT_SUPPORTED = "not_supported"  # this GPU or mode cannot answer (MIG, older architecture)
    FUNCTION_NOT_FOUND = "function_not_found"  # the driver predates the function (or its version)
    NO_PERMISSION = "no_permission"
    GPU_LOST = "gpu_lost"  # fell off the bus, or needs a reset: the GPU is gone until then
    TIMEOUT = "timeout"  # a call that did not return in time (a hung driver)
    NOT_FOUND = "not_found"  # e.g. an empty MIG slot
    UNAVAILABLE = "unavailable"  # no library, no driver, not initialised: no NVML on this machine
    ERROR = "error"  # anything else; worth retrying on the next scrape


class NvmlError(Exception):
    def __init__(self, kind: NvmlErrorKind, detail: str) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True, slots=True)
class MemoryV2:
    """nvmlDeviceGetMemoryInfo_v2, bytes. `used` is allocated memory only; `reserved` is the driver's."""

    total: int
    reserved: int
    free: int
    used: int


@dataclass(frozen=True, slots=True)
class MemoryV1:
    """nvmlDeviceGetMemoryInfo (drivers before the v2 call), bytes; `used` includes the reservation."""

    total: int
    free: int
    used: int


@dataclass(frozen=True, slots=True)
class Utilization:
    """nvmlDeviceGetUtilizationRates: percent of the last sample period (kernel running; memory busy)."""

    gpu: int
    memory: int


@dataclass(frozen=True, slots=True)
class RemappedRows:
    """nvmlDeviceGetRemappedRows (Ampere and newer): rows remapped for correctable and uncorrectable errors,
    a remapping waiting for the next GPU reset, and a remapping that failed (no spare rows left)."""

    correctable: int
    uncorrectable: int
    pending: bool
    failure: bool


@dataclass(frozen=True, slots=True)
class Process:
    """One entry of nvmlDeviceGetComputeRunningProcesses: a host PID and the GPU memory it holds (bytes;
    None when the driver cannot say, e.g. under WDDM)."""

    pid: int
    used_memory: int | None


@dataclass(frozen=True, slots=True)
class Event:
    """One nvmlEventSetWait answer: the device it came from, its type bit and its data (the XID number)."""

    device: Handle
    event_type: int
    data: int


class Nvml(Protocol):
    """The NVML calls the GPU collector makes. Every method may raise `NvmlError`."""

    def init(self) -> None: ...
    def shutdown(self) -> None: ...
    def driver_version(self) -> str: ...
    def device_count(self) -> int: ...
    def handle_by_index(self, index: int) -> Handle: ...
    def uuid(self, handle: Handle) -> str: ...
    def name(self, handle: Handle) -> str: ...
    def memory_v2(self, handle: Handle) -> MemoryV2: ...
    def memory_v1(self, handle: Handle) -> MemoryV1: ...
    def utilization(self, handle: Handle) -> Utilization: ...
    def power_milliwatts(self, handle: Handle) -> int: ...
    def temperature_celsius(self, handle: Handle) -> int: ...
    def temperature_celsius_legacy(self, handle: Handle) -> int: ...
    def energy_millijoules(self, handle: Handle) -> int: ...
    def max_memory_clock_mhz(self, handle: Handle) -> int: ...
    def memory_bus_width_bits(self, handle: Handle) -> int: ...
    def mig_mode(self, handle: Handle) -> bool: ...
    def max_mig_device_count(self, handle: Handle) -> int: ...
    def mig_device_by_index(self, handle: Handle, index: int) -> Handle: ...
    def gpu_instance_id(self, handle: Handle) -> int: ...
    def compute_instance_id(self, handle: Handle) -> int: ...
    def gpm_supported(self, handle: Handle) -> bool: ...
    def gpm_sample_alloc(self) -> Sample: ...
    def gpm_sample_free(self, sample: Sample) -> None: ...
    def gpm_sample_get(self, handle: Handle, sample: Sample) -> None: ...
    def gpm_mig_sample_get(self, parent: Handle, gpu_instance_id: int, sample: Sample) -> None: ...
    def gpm_metrics(self, first: Sample, second: Sample, ids: Sequence[int]) -> dict[int, float | NvmlError]: ...
    def ecc_errors(self, handle: Handle, *, uncorrected: bool) -> int: ...
    def remapped_rows(self, handle: Handle) -> RemappedRows: ...
    def retired_pages(self, handle: Handle, *, double_bit: bool) -> int: ...
    def compute_processes(self, handle: Handle) -> list[Process]: ...
    def supported_event_types(self, handle: Handle) -> int: ...
    def event_set_create(self) -> EventSet: ...
    def register_events(self, handle: Handle, event_types: int, event_set: EventSet) -> None: ...
    def event_set_wait(self, event_set: EventSet, timeout_ms: int) -> Event | None: ...
    def event_set_free(self, event_set: EventSet) -> None: ...


T = TypeVar("T")


class PynvmlSource:
    """`Nvml` over the real bindings. Thread-safe as NVML is; init once per process (NVML is ref-counted)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._initialised = False
        self._nvml: Any = None

    def init(self) -> None:
        with self._lock:
            if self._initialised:
                return
            try:
                import pynvml
            except ImportError as exc:
                raise NvmlError(NvmlErrorKind.UNAVAILABLE, f"nvidia-ml-py is not installed: {exc}") from exc
            self._nvml = pynvml
            self._call(pynvml.nvmlInit)
            self._initialised = True

    def shutdown(self) -> None:
        with self._lock:
            if self._initialised:
                self._initialised = False
                self._call(self._nvml.nvmlShutdown)

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` with pynvml's exceptions mapped to `NvmlError`."""
        try:
            return fn(*args)
        except self._nvml.NVMLError as exc:
            raise NvmlError(_kind(self._nvml, exc.value), f"{fn.__name__}: {exc}") from exc
        except self._nvml.NVMLLibraryMismatchError as exc:  # not an NVMLError subclass
            raise NvmlError(NvmlErrorKind.FUNCTION_NOT_FOUND, f"{fn.__name__}: {exc}") from exc

    def driver_version(self) -> str:
        return str(self._call(self._nvml.nvmlSystemGetDriverVersion))

    def device_count(self) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetCount))

    def handle_by_index(self, index: int) -> Handle:
        return Handle(self._call(self._nvml.nvmlDeviceGetHandleByIndex, index))

    def uuid(self, handle: Handle) -> str:
        return str(self._call(self._nvml.nvmlDeviceGetUUID, handle))

    def name(self, handle: Handle) -> str:
        return str(self._call(self._nvml.nvmlDeviceGetName, handle))

    def memory_v2(self, handle: Handle) -> MemoryV2:
        m = self._call(self._nvml.nvmlDeviceGetMemoryInfo, handle, self._nvml.nvmlMemory_v2)
        return MemoryV2(total=m.total, reserved=m.reserved, free=m.free, used=m.used)

    def memory_v1(self, handle: Handle) -> MemoryV1:
        m = self._call(self._nvml.nvmlDeviceGetMemoryInfo, handle)
        return MemoryV1(total=m.total, free=m.free, used=m.used)

    def utilization(self, handle: Handle) -> Utilization:
        u = self._call(self._nvml.nvmlDeviceGetUtilizationRates, handle)
        return Utilization(gpu=u.gpu, memory=u.memory)

    def power_milliwatts(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetPowerUsage, handle))

    def temperature_celsius(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetTemperatureV, handle, self._nvml.NVML_TEMPERATURE_GPU))

    def temperature_celsius_legacy(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetTemperature, handle, self._nvml.NVML_TEMPERATURE_GPU))

    def energy_millijoules(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetTotalEnergyConsumption, handle))

    def max_memory_clock_mhz(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetMaxClockInfo, handle, self._nvml.NVML_CLOCK_MEM))

    def memory_bus_width_bits(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetMemoryBusWidth, handle))

    def mig_mode(self, handle: Handle) -> bool:
        current, _pending = self._call(self._nvml.nvmlDeviceGetMigMode, handle)
        return bool(current == self._nvml.NVML_DEVICE_MIG_ENABLE)

    def max_mig_device_count(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetMaxMigDeviceCount, handle))

    def mig_device_by_index(self, handle: Handle, index: int) -> Handle:
        return Handle(self._call(self._nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, index))

    def gpu_instance_id(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetGpuInstanceId, handle))

    def compute_instance_id(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetComputeInstanceId, handle))

    def gpm_supported(self, handle: Handle) -> bool:
        return bool(self._call(self._nvml.nvmlGpmQueryDeviceSupport, handle).isSupportedDevice)

    def gpm_sample_alloc(self) -> Sample:
        return Sample(self._call(self._nvml.nvmlGpmSampleAlloc))

    def gpm_sample_free(self, sample: Sample) -> None:
        self._call(self._nvml.nvmlGpmSampleFree, sample)

    def gpm_sample_get(self, handle: Handle, sample: Sample) -> None:
        self._call(self._nvml.nvmlGpmSampleGet, handle, sample)

    def gpm_mig_sample_get(self, parent: Handle, gpu_instance_id: int, sample: Sample) -> None:
        self._call(self._nvml.nvmlGpmMigSampleGet, parent, gpu_instance_id, sample)

    def gpm_metrics(self, first: Sample, second: Sample, ids: Sequence[int]) -> dict[int, float | NvmlError]:
        n = self._nvml
        request = n.c_nvmlGpmMetricsGet_t()
        request.version = n.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(ids)
        request.sample1, request.sample2 = first, second
        for i, metric_id in enumerate(ids):
            request.metrics[i].metricId = metric_id
        self._call(n.nvmlGpmMetricsGet, request)
        out: dict[int, float | NvmlError] = {}
        for i, metric_id in enumerate(ids):
            metric = request.metrics[i]
            # each metric carries its own return code: one unsupported metric must not hide the others
            if metric.nvmlReturn == n.NVML_SUCCESS:
                out[metric_id] = float(metric.value)
            else:
                out[metric_id] = NvmlError(_kind(n, metric.nvmlReturn), f"GPM metric {metric_id}")
        return out

    def ecc_errors(self, handle: Handle, *, uncorrected: bool) -> int:
        # aggregate: the device's lifetime count, kept in its infoROM across driver reloads (the volatile
        # count restarts at every driver load, which a counter must not do)
        n = self._nvml
        kind = n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED if uncorrected else n.NVML_MEMORY_ERROR_TYPE_CORRECTED
        return int(self._call(n.nvmlDeviceGetTotalEccErrors, handle, kind, n.NVML_AGGREGATE_ECC))

    def remapped_rows(self, handle: Handle) -> RemappedRows:
        corr, unc, pending, failure = self._call(self._nvml.nvmlDeviceGetRemappedRows, handle)
        return RemappedRows(int(corr), int(unc), bool(pending), bool(failure))

    def retired_pages(self, handle: Handle, *, double_bit: bool) -> int:
        n = self._nvml
        cause = (
            n.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
            if double_bit
            else n.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
        )
        return len(self._call(n.nvmlDeviceGetRetiredPages, handle, cause))

    def compute_processes(self, handle: Handle) -> list[Process]:
        """Compute processes and MPS clients (under MPS the plain list holds only the MPS server), by PID."""
        n = self._nvml
        procs = list(self._call(n.nvmlDeviceGetComputeRunningProcesses, handle))
        try:
            procs += self._call(n.nvmlDeviceGetMPSComputeRunningProcesses, handle)
        except NvmlError as exc:
            if exc.kind not in (NvmlErrorKind.NOT_SUPPORTED, NvmlErrorKind.FUNCTION_NOT_FOUND):
                raise
        out: dict[int, Process] = {}
        for p in procs:
            out.setdefault(int(p.pid), Process(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory)))
        return list(out.values())

    def supported_event_types(self, handle: Handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetSupportedEventTypes, handle))

    def event_set_create(self) -> EventSet:
        return EventSet(self._call(self._nvml.nvmlEventSetCreate))

    def register_events(self, handle: Handle, event_types: int, event_set: EventSet) -> None:
        self._call(self._nvml.nvmlDeviceRegisterEvents, handle, event_types, event_set)

    def event_set_wait(self, event_set: EventSet, timeout_ms: int) -> Event | None:
        """The next event, or None when none came within `timeout_ms`."""
        try:
            data = self._call(self._nvml.nvmlEventSetWait, event_set, timeout_ms)
        except NvmlError as exc:
            if exc.kind is NvmlErrorKind.TIMEOUT:
                return None
            raise
        return Event(Handle(data.device), int(data.eventType), int(data.eventData))

    def event_set_free(self, event_set: EventSet) -> None:
        self._call(self._nvml.nvmlEventSetFree, event_set)


def _kind(nvml: Any, code: int) -> NvmlErrorKind:
    if code in (nvml.NVML_ERROR_NOT_SUPPORTED,):
        return NvmlErrorKind.NOT_SUPPORTED
    if code == nvml.NVML_ERROR_FUNCTION_NOT_FOUND:
        return NvmlErrorKind.FUNCTION_NOT_FOUND
    if code == nvml.NVML_ERROR_NO_PERMISSION:
        return NvmlErrorKind.NO_PERMISSION
    if code in (nvml.NVML_ERROR_GPU_IS_LOST, nvml.NVML_ERROR_RESET_REQUIRED):
        return NvmlErrorKind.GPU_LOST
    if code == nvml.NVML_ERROR_NOT_FOUND:
        return NvmlErrorKind.NOT_FOUND
    if code == nvml.NVML_ERROR_TIMEOUT:
        return NvmlErrorKind.TIMEOUT
    if code in (
        nvml.NVML_ERROR_LIBRARY_NOT_FOUND,
        nvml.NVML_ERROR_DRIVER_NOT_LOADED,
        nvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
        nvml.NVML_ERROR_UNINITIALIZED,
    ):
        return NvmlErrorKind.UNAVAILABLE
    return NvmlErrorKind.ERROR
