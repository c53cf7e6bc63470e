"""GPU metrics (node role): NVML memory, bandwidth and utilisation per GPU, and GPU-to-pod attribution."""

from __future__ import annotations

from functools import partial

from exporter.catalogue.spec import MetricSpec, Stability, counter, gauge

GPU = ("node", "gpu", "uuid")  # the node ($NODE_NAME), NVML index and UUID (GPU-... or MIG-...)

_g = partial(gauge, subsystem="gpu", role="node")

GPU_INFO = _g("llm_gpu_info", "GPU identity, value 1.", (*GPU, "name", "driver_version", "mig_mode"))
GPU_UP = _g(
    "llm_gpu_up",
    "1 when NVML answers for this GPU, 0 when it cannot be read (lost: fell off the bus, needs a reset; or no "
    "permission).",
    GPU,
)
MEMORY_TOTAL = _g("llm_gpu_memory_total_bytes", "Total GPU memory.", GPU, unit="bytes")
MEMORY_USED = _g("llm_gpu_memory_used_bytes", "GPU memory in use.", GPU, unit="bytes")
MEMORY_RESERVED = _g(
    "llm_gpu_memory_reserved_bytes", "GPU memory reserved by the driver and firmware.", GPU, unit="bytes"
)
MEMORY_BUSY = _g(
    "llm_gpu_memory_busy_ratio",
    "Fraction of the last sample period during which GPU memory was read or written (NVML "
    "utilization.memory). A time fraction, not bandwidth.",
    GPU,
    unit="ratio",
)
MEMORY_BANDWIDTH_UTILIZATION = _g(
    "llm_gpu_memory_bandwidth_utilization_ratio",
    "DRAM bandwidth used as a fraction of the peak (GPM DRAM_BW_UTIL, Hopper and newer).",
    GPU,
    unit="ratio",
)
MEMORY_BANDWIDTH_MAX = _g(
    "llm_gpu_memory_bandwidth_max_bytes_per_second",
    "Theoretical peak memory bandwidth from the maximum memory clock and the bus width.",
    GPU,
    unit="bytes_per_second",
)
PEAK_FLOPS = _g(
    "llm_gpu_peak_flops",
    "Peak dense Tensor Core floating point operations per second of this GPU model at `precision` (fp4, fp8, "
    "fp16, bf16, tf32), from the vendor's datasheet (exporter/gpu/data/peak_flops.json; dense, never the "
    "with-sparsity figure). Only for models in that table and whole GPUs, not MIG instances.",
    (*GPU, "precision"),
    stability=Stability.EXPERIMENTAL,
)
UTILIZATION = _g(
    "llm_gpu_utilization_ratio", "Fraction of the last sample period during which a kernel ran.", GPU, unit="ratio"
)
SM_OCCUPANCY = _g("llm_gpu_sm_occupancy_ratio", "SM occupancy (GPM, Hopper and newer).", GPU, unit="ratio")
POWER = _g("llm_gpu_power_watts", "Power draw.", GPU, unit="watts")
TEMPERATURE = _g("llm_gpu_temperature_celsius", "GPU core temperature.", GPU, unit="celsius")
ENERGY = counter(
    "llm_gpu_energy_joules_total",
    "Energy consumed since the driver was loaded.",
    GPU,
    subsystem="gpu",
    role="node",
    unit="joules",
)
GPM_SUPPORTED = _g(
    "llm_gpu_gpm_supported",
    "1 when the GPU supports GPM (GPU performance monitoring, Hopper and newer) and so exports memory bandwidth "
    "utilisation and SM occupancy; 0 when it does not.",
    GPU,
)
FIELD_UNAVAILABLE = _g(
    "llm_gpu_field_unavailable",
    "1 for each GPU reading that NVML could not give in this scrape, by field and reason (not_supported, "
    "function_not_found, no_permission, timeout, unavailable, error; gpu_lost for field device; not_in_table "
    "for field peak_flops: a GPU model exporter/gpu/data/peak_flops.json does not hold); that field's series is "
    "absent, never a fake 0.",
    (*GPU, "field", "reason"),
)
MIG_INFO = _g(
    "llm_gpu_mig_info",
    "A MIG instance (uuid MIG-...) of the physical GPU parent_uuid, value 1. MIG instances carry their parent's "
    "gpu index and are not whole GPUs: select whole GPUs with `and on(uuid) llm_gpu_info`.",
    (*GPU, "parent_uuid", "gpu_instance_id", "compute_instance_id"),
)
POD_INFO = _g(
    "llm_gpu_pod_info", "The pod container a GPU is assigned to, value 1.", (*GPU, "namespace", "pod", "container")
)

# Faults (Ampere/Hopper row remapping, Volta page retirement, XIDs): counts that outlive the error's recovery.
_c = partial(counter, subsystem="gpu", role="node")
ECC_ERRORS = _c(
    "llm_gpu_ecc_errors_total",
    "DRAM ECC errors over the GPU's lifetime (NVML aggregate count, kept in the infoROM across driver reloads), "
    "by type: corrected (single-bit) or uncorrected (double-bit). Absent where ECC is off or unsupported.",
    (*GPU, "type"),
)
REMAPPED_ROWS = _g(
    "llm_gpu_remapped_rows",
    "DRAM rows remapped to spare rows (Ampere and newer), by the errors that caused it: correctable or uncorrectable.",
    (*GPU, "state"),
)
ROW_REMAP_PENDING = _g(
    "llm_gpu_row_remap_pending",
    "1 when a row remapping waits for the next GPU reset to take effect; 0 when none does.",
    GPU,
)
ROW_REMAP_FAILED = _g(
    "llm_gpu_row_remap_failed",
    "1 when a row remapping failed (no spare rows left in a bank): the GPU needs servicing; 0 otherwise.",
    GPU,
)
RETIRED_PAGES = _g(
    "llm_gpu_retired_pages",
    "GPU memory pages retired (Volta and older; newer GPUs remap rows instead), by cause: "
    "multiple_single_bit_ecc or double_bit_ecc.",
    (*GPU, "cause"),
)
XID_ERRORS = _c(
    "llm_gpu_xid_errors_total",
    "Critical XID errors reported by the driver (NVML event nvmlEventTypeXidCriticalError) since the exporter "
    "started, by XID number; a series appears at its first occurrence.",
    (*GPU, "xid"),
)

# Per-process memory joined to pods (exporter/gpu/processes.py).
POD = ("namespace", "pod", "container")
POD_MEMORY_USED = _g(
    "llm_gpu_pod_memory_used_bytes",
    "GPU memory held by the processes of a container that the kubelet assigned this device (a GPU or MIG "
    "instance); each pod on a shared GPU counts its own processes, never the device total.",
    (*GPU, *POD),
    unit="bytes",
)
UNATTRIBUTED_MEMORY = _g(
    "llm_gpu_unattributed_memory_bytes",
    "GPU memory held by processes that belong to no container the kubelet assigned this device: host jobs, "
    "processes of deleted pods, debug containers, pods using GPUs they did not request.",
    GPU,
    unit="bytes",
)
ALLOCATED_IDLE = _g(
    "llm_gpu_allocated_idle",
    "1 when the container assigned this device has had no process on it, or the device's utilisation stayed "
    "below gpu.allocated_idle_utilization, for gpu.allocated_idle_seconds; 0 otherwise.",
    (*GPU, *POD),
)

METRICS: tuple[MetricSpec, ...] = (
    GPU_INFO,
    GPU_UP,
    MEMORY_TOTAL,
    MEMORY_USED,
    MEMORY_RESERVED,
    MEMORY_BUSY,
    MEMORY_BANDWIDTH_UTILIZATION,
    MEMORY_BANDWIDTH_MAX,
    PEAK_FLOPS,
    UTILIZATION,
    SM_OCCUPANCY,
    POWER,
    TEMPERATURE,
    ENERGY,
    GPM_SUPPORTED,
    FIELD_UNAVAILABLE,
    MIG_INFO,
    POD_INFO,
    ECC_ERRORS,
    REMAPPED_ROWS,
    ROW_REMAP_PENDING,
    ROW_REMAP_FAILED,
    RETIRED_PAGES,
    XID_ERRORS,
    POD_MEMORY_USED,
    UNATTRIBUTED_MEMORY,
    ALLOCATED_IDLE,
)
