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

GPM_DRAM_BW_UTIL = 10  # NVML_GPM_METRIC_DRAM_BW_UTIL: % of theoretical DRAM bandwidth
GPM_SM_OCCUPANCY = 3  # NVML_GPM_METRIC_SM_OCCUPANCY: % of active warps vs the theoretical maximum


class NvmlErrorKind(enum.StrEnum):
    """What an NVML failure means for the caller; the value is the `reason` label of the metrics."""

    NOT_SUPPORTED = "not_supported"  # this GPU or mode cannot answer (MIG, older architecture)
    FUNCTION_NOT_FOUND = "function_not_found"  # the driver predates the function (or its version)
    NO_PERMISSION = "no_permission"
    GPU_LOST = "gpu_lost"  # fell off the bus, or needs a reset: the GPU is gone until then
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
    if code in (
        nvml.NVML_ERROR_LIBRARY_NOT_FOUND,
        nvml.NVML_ERROR_DRIVER_NOT_LOADED,
        nvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
        nvml.NVML_ERROR_UNINITIALIZED,
    ):
        return NvmlErrorKind.UNAVAILABLE
    return NvmlErrorKind.ERROR
