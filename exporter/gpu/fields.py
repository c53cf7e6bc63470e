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
    ECC_CORRECTED = "ecc_errors_corrected"
    ECC_UNCORRECTED = "ecc_errors_uncorrected"
    REMAPPED_CORRECTABLE = "remapped_rows_correctable"
    REMAPPED_UNCORRECTABLE = "remapped_rows_uncorrectable"
    ROW_REMAP_PENDING = "row_remap_pending"
    ROW_REMAP_FAILED = "row_remap_failed"
    RETIRED_SINGLE_BIT = "retired_pages_multiple_single_bit_ecc"
    RETIRED_DOUBLE_BIT = "retired_pages_double_bit_ecc"
    POD_MEMORY = "pod_memory"  # per-pod and unattributed memory: needs this node's pods and PodResources
    PROCESSES = "processes"  # the compute process list, for per-pod memory (exporter/gpu/processes.py)
    XID_ERRORS = "xid_errors"  # counted by the event thread (exporter/gpu/xid.py); only its absence is a field
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
    Field.ECC_CORRECTED: cat.ECC_ERRORS,
    Field.ECC_UNCORRECTED: cat.ECC_ERRORS,
    Field.REMAPPED_CORRECTABLE: cat.REMAPPED_ROWS,
    Field.REMAPPED_UNCORRECTABLE: cat.REMAPPED_ROWS,
    Field.ROW_REMAP_PENDING: cat.ROW_REMAP_PENDING,
    Field.ROW_REMAP_FAILED: cat.ROW_REMAP_FAILED,
    Field.RETIRED_SINGLE_BIT: cat.RETIRED_PAGES,
    Field.RETIRED_DOUBLE_BIT: cat.RETIRED_PAGES,
}

# The label value a field adds to the GPU labels, where several fields share one family.
EXTRA_LABEL: dict[Field, str] = {
    Field.ECC_CORRECTED: "corrected",
    Field.ECC_UNCORRECTED: "uncorrected",
    Field.REMAPPED_CORRECTABLE: "correctable",
    Field.REMAPPED_UNCORRECTABLE: "uncorrectable",
    Field.RETIRED_SINGLE_BIT: "multiple_single_bit_ecc",
    Field.RETIRED_DOUBLE_BIT: "double_bit_ecc",
}

MEMORY_FIELDS = (Field.MEMORY_TOTAL, Field.MEMORY_USED, Field.MEMORY_RESERVED)
GPM_FIELDS = (Field.BANDWIDTH_UTILIZATION, Field.SM_OCCUPANCY)
REMAP_FIELDS = (
    Field.REMAPPED_CORRECTABLE,
    Field.REMAPPED_UNCORRECTABLE,
    Field.ROW_REMAP_PENDING,
    Field.ROW_REMAP_FAILED,
)
