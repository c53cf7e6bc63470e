"""The per-GPU readings, each tied to its catalogue metric and the unit conversion from NVML's unit."""

from __future__ import annotations

import enum

from exporter.catalogue import gpu as cat
from exporter.catalogue.spec import MetricSpec


class Field(enum.StrEnum):
    """One reading of one device; the value is the `field` label of `llm_gpu_field_unavailable`."""

    MEMORY_TOTAL = "memory_total"
    MEMORY_USED = "memory_used"
    MEMORY_RESERVED = "memory_reserved"
    MEMORY_BUSY = "memory_busy"
    UTILIZATION = "utilization"
    POWER = "power"
    TEMPERATURE = "temperature"
    ENERGY = "energy"
    BANDWIDTH_MAX = "memory_bandwidth_max"
    BANDWIDTH_UTILIZATION = "memory_bandwidth_utilization"
    SM_OCCUPANCY = "sm_occupancy"
    DEVICE = "device"  # the device itself (handle or UUID): the GPU is down, see llm_gpu_up


SPECS: dict[Field, MetricSpec] = {
    Field.MEMORY_TOTAL: cat.MEMORY_TOTAL,
    Field.MEMORY_USED: cat.MEMORY_USED,
    Field.MEMORY_RESERVED: cat.MEMORY_RESERVED,
    Field.MEMORY_BUSY: cat.MEMORY_BUSY,
    Field.UTILIZATION: cat.UTILIZATION,
    Field.POWER: cat.POWER,
    Field.TEMPERATURE: cat.TEMPERATURE,
    Field.ENERGY: cat.ENERGY,
    Field.BANDWIDTH_MAX: cat.MEMORY_BANDWIDTH_MAX,
    Field.BANDWIDTH_UTILIZATION: cat.MEMORY_BANDWIDTH_UTILIZATION,
    Field.SM_OCCUPANCY: cat.SM_OCCUPANCY,
}

MEMORY_FIELDS = (Field.MEMORY_TOTAL, Field.MEMORY_USED, Field.MEMORY_RESERVED)
GPM_FIELDS = (Field.BANDWIDTH_UTILIZATION, Field.SM_OCCUPANCY)
