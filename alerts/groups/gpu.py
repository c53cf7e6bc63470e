"""Alert group llm-inference.gpu: GPU memory and GPUs NVML cannot read."""

from __future__ import annotations

from alerts.model import Alert
from alerts.thresholds import Thresholds

GROUP = "llm-inference.gpu"


def alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            name="LLMGPUMemoryNearlyFull",
            group=GROUP,
            query="llm_gpu_memory_used_bytes / llm_gpu_memory_total_bytes",
            op=">",
            threshold=t.gpu_memory_ratio,
            for_=t.gpu_memory_for,
            severity="warning",
            summary="GPU {{ $labels.gpu }} on {{ $labels.instance }} is {{ $value | humanizePercentage }} full.",
            description=(
                f"GPU memory use is above {t.gpu_memory_ratio:.0%}; new processes or CUDA graph captures on it will "
                "fail with out-of-memory. Check what else runs on the GPU."
            ),
        ),
        Alert(
            name="LLMGPULost",
            group=GROUP,
            query="llm_gpu_up",
            op="==",
            threshold=0,
            for_=t.gpu_lost_for,
            severity="critical",
            summary="GPU {{ $labels.gpu }} ({{ $labels.uuid }}) on {{ $labels.instance }} cannot be read.",
            description=(
                "NVML cannot read this GPU: it fell off the bus or needs a reset. Pods on it fail; cordon the node "
                "and check the kernel log for Xid errors."
            ),
        ),
    ]
