"""Recording rules `llm-inference.bottleneck`: which resource binds each model now (stage 3): `kv_capacity` (KV
cache full with requests waiting, or preemptions), `memory_bandwidth` (the model's GPUs near their memory
bandwidth peak while decoding), `compute` (requests wait although KV cache and bandwidth have room: prefill is
saturated) or `none`. The first that holds wins, in that order; the runbook has the definitions."""

from __future__ import annotations

from alerts.expr import MODEL
from alerts.model import Recording
from alerts.thresholds import Thresholds

GROUP = "llm-inference.bottleneck"
BOTTLENECKS = ("kv_capacity", "memory_bandwidth", "compute", "none")


def _per_model_gpu(metric: str, model_of_pod: str) -> str:
    """A per-GPU series joined to the pods on it, then to the model those pods serve, max per model: uuid is
    unique in the cluster, pod names are unique in their namespace."""
    per_pod = f"max by (namespace, pod) ({metric} * on (uuid) group_left (namespace, pod) llm_gpu_pod_info)"
    return f"max by ({MODEL}) ({per_pod} * on (namespace, pod) group_left (model) {model_of_pod})"


def _gpu_peak(peak: str) -> str:
    """Each engine pod's GPUs' peak (`peak`: a per-uuid series), averaged over its GPUs; pod info on the many
    side, so pods time-sliced on one GPU each join it."""
    return f"avg by (namespace, pod) (llm_gpu_pod_info * on (uuid) group_left () max by (uuid) ({peak}))"


def model_utilization(counter: str, peak: str) -> str:
    """rate(`counter`, the engine's per-GPU estimate) over its GPUs' `peak`, averaged per model."""
    done = f"sum by (namespace, pod, model, dp_rank) (rate({counter}[5m]))"
    return f"avg by ({MODEL}) ({done} / on (namespace, pod) group_left () {_gpu_peak(peak)})"


def bandwidth_utilization() -> str:
    """MBU: the bytes the engine estimates it read per GPU (vLLM --enable-mfu-metrics) over the peak bandwidth."""
    return model_utilization("llm_estimated_read_bytes_per_gpu_total", "llm_gpu_memory_bandwidth_max_bytes_per_second")


def flops_utilization(t: Thresholds) -> str:
    """MFU: the FLOPs the engine estimates it ran per GPU over the datasheet's dense peak at `mfu_precision`."""
    peak = f'llm_gpu_peak_flops{{precision="{t.mfu_precision}"}}'
    return model_utilization("llm_estimated_flops_per_gpu_total", peak)


def recordings(t: Thresholds) -> list[Recording]:
    waiting = f"sum by ({MODEL}) (llm_requests_waiting) > 0"
    kv = (
        f"(max by ({MODEL}) (llm_kv_cache_usage_ratio) > {t.bottleneck_kv_ratio} and on ({MODEL}) {waiting})"
        f" or on ({MODEL}) (sum by ({MODEL}) (rate(llm_preemptions_total[5m])) > 0)"
    )
    # Bandwidth used, per model: GPM's DRAM bandwidth where its GPUs have GPM (Hopper+); else the engine's own
    # estimate over the peak (MBU: A100, L4, older drivers); else NVML's memory busy ratio (a time share)
    model_of_pod = "group by (namespace, pod, model) (llm_requests_running > 0)"
    used = (
        f"{_per_model_gpu('llm_gpu_memory_bandwidth_utilization_ratio', model_of_pod)}"
        f" or on ({MODEL}) {bandwidth_utilization()}"
        f" or on ({MODEL}) {_per_model_gpu('llm_gpu_memory_busy_ratio', model_of_pod)}"
    )
    bandwidth = f"({used}) > {t.bottleneck_bandwidth_ratio}"
    # compute: requests wait although KV cache and bandwidth have room, or the engine's FLOPs are near the peak
    compute = f"({waiting}) or on ({MODEL}) ({flops_utilization(t)} > {t.bottleneck_compute_ratio})"
    signals = {
        "kv_capacity": kv,
        "memory_bandwidth": bandwidth,
        "compute": compute,
        "none": f"max by ({MODEL}) (llm_requests_running)",
    }
    out = [
        Recording(f"llm:bottleneck_signal:{name}", GROUP, f"group by ({MODEL}) ({expr})")
        for name, expr in signals.items()
    ]
    # one class per model: the first signal in BOTTLENECKS order that holds
    parts = []
    for i, name in enumerate(BOTTLENECKS):
        expr = f"llm:bottleneck_signal:{name}"
        for earlier in BOTTLENECKS[:i]:
            expr = f"{expr} unless on ({MODEL}) llm:bottleneck_signal:{earlier}"
        parts.append(f'label_replace({expr}, "resource", "{name}", "", "")')
    out.append(Recording("llm:bottleneck", GROUP, " or ".join(parts)))
    return out
