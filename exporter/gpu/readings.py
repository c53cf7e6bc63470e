"""One scrape's readings of every GPU and MIG instance, isolated per device and per field.

A field NVML cannot give (a function missing on an older driver, not supported on this GPU or in MIG mode,
no permission) is recorded as unavailable with its reason and the other fields still report. A GPU that is
lost (fell off the bus, needs a reset) reports `up = False` and nothing else; the other GPUs keep reporting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from exporter.gpu.bandwidth import peak_bytes_per_second
from exporter.gpu.fields import GPM_FIELDS, MEMORY_FIELDS, REMAP_FIELDS, Field
from exporter.gpu.gpm import GpmSampler, Readout
from exporter.sources.nvml import Handle, Nvml, NvmlError, NvmlErrorKind, Process

T = TypeVar("T")

# Answers that do not change for the life of a GPU: cache them, including the error, instead of asking again.
_STABLE = (NvmlErrorKind.NOT_SUPPORTED, NvmlErrorKind.FUNCTION_NOT_FOUND, NvmlErrorKind.NO_PERMISSION)


@dataclass
class MigReading:
    """A MIG instance: its own memory and GPM readings, labelled with its parent's index."""

    gpu: str
    uuid: str
    parent_uuid: str
    gpu_instance_id: int
    compute_instance_id: int
    values: dict[Field, float] = field(default_factory=dict)
    errors: dict[Field, NvmlErrorKind] = field(default_factory=dict)
    processes: list[Process] | None = None  # None: unreadable (the reason is in errors)


@dataclass
class DeviceReading:
    """A physical GPU as seen in one scrape."""

    gpu: str  # NVML index, as a label value
    uuid: str  # "" only when the GPU was unreadable from the first scrape on
    up: bool
    name: str = ""
    mig_mode: str = ""  # enabled | disabled | unsupported | unknown
    gpm_supported: bool | None = None  # None: NVML would not say
    values: dict[Field, float] = field(default_factory=dict)
    errors: dict[Field, NvmlErrorKind] = field(default_factory=dict)
    migs: list[MigReading] = field(default_factory=list)
    # compute processes; None when unreadable (reason in errors) or in MIG mode (each instance has its own)
    processes: list[Process] | None = None


@dataclass(frozen=True)
class _Static:
    name: str
    peak_bandwidth: float | NvmlErrorKind
    gpm_supported: bool | NvmlErrorKind


class _GpuLostError(Exception):
    """Internal: NVML said GPU_LOST in the middle of reading a device."""


class GpuReader:
    """Reads all devices through `nvml`; keeps per-GPU static answers and the GPM sample pairs."""

    def __init__(self, nvml: Nvml, sampler: GpmSampler) -> None:
        self._nvml = nvml
        self._sampler = sampler
        self._static: dict[str, _Static] = {}
        self._uuid_by_index: dict[int, str] = {}  # to label a GPU that is lost after it was first seen
        # row remapping (Ampere on) and page retirement (Volta and older) are the GPU architecture's: an
        # unsupported answer stands for the GPU's life, and is not asked again at every scrape
        self._architecture: dict[str, dict[Field, NvmlErrorKind]] = {}

    def read_all(self) -> list[DeviceReading]:
        readings = [self.read_device(i) for i in range(self._nvml.device_count())]
        live = [r.uuid for r in readings if r.up] + [m.uuid for r in readings for m in r.migs]
        self._sampler.retain(live)
        return readings

    def read_device(self, index: int) -> DeviceReading:
        gpu = str(index)
        try:
            handle = self._nvml.handle_by_index(index)
            uuid = self._nvml.uuid(handle)
        except NvmlError as exc:
            return self._down(index, exc.kind)
        self._uuid_by_index[index] = uuid
        try:
            return self._read(gpu, uuid, handle)
        except _GpuLostError:
            self._sampler.forget(uuid)
            return self._down(index, NvmlErrorKind.GPU_LOST)

    def _down(self, index: int, kind: NvmlErrorKind) -> DeviceReading:
        uuid = self._uuid_by_index.get(index, "")
        return DeviceReading(gpu=str(index), uuid=uuid, up=False, errors={Field.DEVICE: kind})

    def _read(self, gpu: str, uuid: str, handle: Handle) -> DeviceReading:
        nvml = self._nvml
        static = self._static_of(uuid, handle)
        reading = DeviceReading(gpu=gpu, uuid=uuid, up=True, name=static.name)
        out: Readout = {}
        _field(out, MEMORY_FIELDS, lambda: _memory(nvml, handle))
        _field(out, (Field.UTILIZATION, Field.MEMORY_BUSY), lambda: _utilization(nvml, handle))
        _field(out, (Field.POWER,), lambda: {Field.POWER: nvml.power_milliwatts(handle) / 1000.0})
        _field(out, (Field.TEMPERATURE,), lambda: {Field.TEMPERATURE: float(_temperature(nvml, handle))})
        _field(out, (Field.ENERGY,), lambda: {Field.ENERGY: nvml.energy_millijoules(handle) / 1000.0})
        out[Field.BANDWIDTH_MAX] = static.peak_bandwidth
        _faults(out, nvml, handle, self._architecture.setdefault(uuid, {}))
        gpm = static.gpm_supported
        # a driver without the GPM functions cannot offer GPM on any GPU: that is a clear "no"
        if isinstance(gpm, bool):
            reading.gpm_supported = gpm
        elif gpm is NvmlErrorKind.FUNCTION_NOT_FOUND:
            reading.gpm_supported = False
        if gpm is True:
            _field(out, GPM_FIELDS, lambda: self._sampler.read(uuid, lambda s: nvml.gpm_sample_get(handle, s)))
        else:
            out.update(dict.fromkeys(GPM_FIELDS, NvmlErrorKind.NOT_SUPPORTED if gpm is False else gpm))
        reading.mig_mode = self._mig_mode(handle)
        if reading.mig_mode == "enabled":
            reading.migs = self._read_migs(gpu, uuid, handle)
        else:
            reading.processes = _processes(nvml, handle, reading.errors)
        _split(out, reading.values, reading.errors)
        return reading

    def _static_of(self, uuid: str, handle: Handle) -> _Static:
        cached = self._static.get(uuid)
        if cached is not None:
            return cached
        nvml = self._nvml
        name = _guard(lambda: nvml.name(handle))
        peak = _guard(
            lambda: peak_bytes_per_second(nvml.max_memory_clock_mhz(handle), nvml.memory_bus_width_bits(handle))
        )
        gpm = _guard(lambda: nvml.gpm_supported(handle))
        static = _Static(name if isinstance(name, str) else "", peak, gpm)
        if all(not isinstance(v, NvmlErrorKind) or v in _STABLE for v in (name, peak, gpm)):
            self._static[uuid] = static
        return static

    def _mig_mode(self, handle: Handle) -> str:
        try:
            return "enabled" if self._nvml.mig_mode(handle) else "disabled"
        except NvmlError as exc:
            if exc.kind is NvmlErrorKind.GPU_LOST:
                raise _GpuLostError from exc
            if exc.kind in (NvmlErrorKind.NOT_SUPPORTED, NvmlErrorKind.FUNCTION_NOT_FOUND):
                return "unsupported"
            return "unknown"

    def _read_migs(self, gpu: str, parent_uuid: str, parent: Handle) -> list[MigReading]:
        nvml = self._nvml
        try:
            slots = nvml.max_mig_device_count(parent)
        except NvmlError as exc:
            if exc.kind is NvmlErrorKind.GPU_LOST:
                raise _GpuLostError from exc
            return []
        migs = []
        for slot in range(slots):
            try:
                handle = nvml.mig_device_by_index(parent, slot)
                uuid = nvml.uuid(handle)
                gi, ci = nvml.gpu_instance_id(handle), nvml.compute_instance_id(handle)
            except NvmlError as exc:
                if exc.kind is NvmlErrorKind.GPU_LOST:
                    raise _GpuLostError from exc
                continue  # an empty slot (NOT_FOUND) or an instance being reconfigured
            mig = MigReading(gpu, uuid, parent_uuid, gi, ci)
            out: Readout = {}
            _field(out, MEMORY_FIELDS, partial(_memory, nvml, handle))
            take = partial(nvml.gpm_mig_sample_get, parent, gi)
            _field(out, GPM_FIELDS, partial(self._sampler.read, uuid, take))
            mig.processes = _processes(nvml, handle, mig.errors)
            _split(out, mig.values, mig.errors)
            migs.append(mig)
        return migs


def _field(out: Readout, fields: tuple[Field, ...], read: Callable[[], Readout]) -> None:
    """Store `read()`'s fields in `out`, or the failure's reason for each of `fields`; GPU_LOST escapes."""
    try:
        out.update(read())
    except NvmlError as exc:
        if exc.kind is NvmlErrorKind.GPU_LOST:
            raise _GpuLostError from exc
        out.update(dict.fromkeys(fields, exc.kind))


def _guard(read: Callable[[], T]) -> T | NvmlErrorKind:
    try:
        return read()
    except NvmlError as exc:
        if exc.kind is NvmlErrorKind.GPU_LOST:
            raise _GpuLostError from exc
        return exc.kind
    except ValueError:  # a zero clock or bus width: no honest peak to report
        return NvmlErrorKind.NOT_SUPPORTED


def _faults(out: Readout, nvml: Nvml, handle: Handle, unsupported: dict[Field, NvmlErrorKind]) -> None:
    """ECC counts, row remapping and retired pages of a physical GPU: each unsupported one is unavailable.
    `unsupported`: this GPU's architecture-bound answers so far, kept by the caller."""
    _field(out, (Field.ECC_CORRECTED,), lambda: {Field.ECC_CORRECTED: nvml.ecc_errors(handle, uncorrected=False)})
    _field(out, (Field.ECC_UNCORRECTED,), lambda: {Field.ECC_UNCORRECTED: nvml.ecc_errors(handle, uncorrected=True)})
    groups: list[tuple[tuple[Field, ...], Callable[[], Readout]]] = [
        (REMAP_FIELDS, lambda: _remapped_rows(nvml, handle)),
        *(
            ((f,), partial(_retired, nvml, handle, f, double_bit))
            for f, double_bit in ((Field.RETIRED_SINGLE_BIT, False), (Field.RETIRED_DOUBLE_BIT, True))
        ),
    ]
    for fields, read in groups:
        if fields[0] in unsupported:
            out.update((f, unsupported[f]) for f in fields)
            continue
        _field(out, fields, read)
        kind = out[fields[0]]
        if isinstance(kind, NvmlErrorKind) and kind in (NvmlErrorKind.NOT_SUPPORTED, NvmlErrorKind.FUNCTION_NOT_FOUND):
            unsupported.update(dict.fromkeys(fields, kind))


def _processes(nvml: Nvml, handle: Handle, errors: dict[Field, NvmlErrorKind]) -> list[Process] | None:
    try:
        return nvml.compute_processes(handle)
    except NvmlError as exc:
        if exc.kind is NvmlErrorKind.GPU_LOST:
            raise _GpuLostError from exc
        errors[Field.PROCESSES] = exc.kind
        return None


def _remapped_rows(nvml: Nvml, handle: Handle) -> Readout:
    rows = nvml.remapped_rows(handle)
    return {
        Field.REMAPPED_CORRECTABLE: rows.correctable,
        Field.REMAPPED_UNCORRECTABLE: rows.uncorrectable,
        Field.ROW_REMAP_PENDING: 1.0 if rows.pending else 0.0,
        Field.ROW_REMAP_FAILED: 1.0 if rows.failure else 0.0,
    }


def _retired(nvml: Nvml, handle: Handle, f: Field, double_bit: bool) -> Readout:
    return {f: nvml.retired_pages(handle, double_bit=double_bit)}


def _split(out: Readout, values: dict[Field, float], errors: dict[Field, NvmlErrorKind]) -> None:
    for key, value in out.items():
        if isinstance(value, NvmlErrorKind):
            errors[key] = value
        else:
            values[key] = float(value)


def _memory(nvml: Nvml, handle: Handle) -> Readout:
    try:
        m = nvml.memory_v2(handle)
        return {Field.MEMORY_TOTAL: m.total, Field.MEMORY_USED: m.used, Field.MEMORY_RESERVED: m.reserved}
    except NvmlError as exc:
        if exc.kind is not NvmlErrorKind.FUNCTION_NOT_FOUND:
            raise
    # drivers before the v2 call: no separate reservation, and `used` includes it
    v1 = nvml.memory_v1(handle)
    missing = NvmlErrorKind.FUNCTION_NOT_FOUND
    return {Field.MEMORY_TOTAL: v1.total, Field.MEMORY_USED: v1.used, Field.MEMORY_RESERVED: missing}


def _utilization(nvml: Nvml, handle: Handle) -> Readout:
    u = nvml.utilization(handle)
    return {Field.UTILIZATION: u.gpu / 100.0, Field.MEMORY_BUSY: u.memory / 100.0}


def _temperature(nvml: Nvml, handle: Handle) -> int:
    try:
        return nvml.temperature_celsius(handle)
    except NvmlError as exc:
        if exc.kind is not NvmlErrorKind.FUNCTION_NOT_FOUND:
            raise
    return nvml.temperature_celsius_legacy(handle)  # nvmlDeviceGetTemperatureV is new in NVML 12.5xx
