"""Alert group llm-inference.gpu-health: GPU health and waste (XIDs, row remapping, GPUs withdrawn, memory of
no pod, idle assignments)."""

from __future__ import annotations

from alerts.model import Alert
from alerts.thresholds import Thresholds

GROUP = "llm-inference.gpu-health"

_PODS_ON_IT = (
    "{{ if $labels.pod }}Pod {{ $labels.namespace }}/{{ $labels.pod }} (container {{ $labels.container }}"
    "{{ if $labels.model }}, model {{ $labels.model }}{{ end }}) runs on it.{{ else }}No pod is assigned this "
    "GPU.{{ end }}"
)


def _naming_pods(expr: str, on: str, keep: str = "") -> str:
    """`expr` (one series per `on` key) once per pod container on that GPU, with its namespace, pod and
    container, and the model the pod serves where its engine reports one; alone for a GPU no pod holds. A MIG
    instance's pods name their parent GPU's index (gpu)."""
    per_pod = f"llm_gpu_pod_info * on ({on}) group_left ({keep}) ({expr})"
    model = "topk by (namespace, pod) (1, group by (namespace, pod, model) (llm_requests_running))"
    with_model = f"({per_pod}) * on (namespace, pod) group_left (model) {model}"
    return f"(({with_model}) or on ({on}, namespace, pod) ({per_pod}) or on ({on}) ({expr}))"


def _recent_xids(t: Thresholds, matcher: str) -> str:
    """The XIDs of `matcher` in the window, the most frequent per GPU; a series born in the window counts
    (increase() needs two samples of it)."""
    x, w = f"llm_gpu_xid_errors_total{{{matcher}}}", t.gpu_xid_window
    seen = f"sum without () ((increase({x}[{w}]) > 0) or ({x} unless {x} offset {w}))"
    return f"topk by (node, gpu) (1, {seen})"


def alerts(t: Thresholds) -> list[Alert]:
    critical = "|".join(str(x) for x in t.gpu_xid_critical)
    xid_text = "NVIDIA's table (runbook) says what XID {{ $labels.xid }} needs. " + _PODS_ON_IT
    return [
        Alert(
            name="LLMGPUXidError",
            group=GROUP,
            query=_naming_pods(_recent_xids(t, f'xid=~"{critical}"'), "node, gpu", "xid"),
            op=">",
            threshold=0,
            for_="0m",
            severity="critical",
            summary=(
                "GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $labels.xid }} ({{ $value }} in "
                f"{t.gpu_xid_window})."
            ),
            description="A fatal XID: the GPU needs a reset, the node a drain, or the GPU a replacement. " + xid_text,
        ),
        Alert(
            name="LLMGPUXidWarning",
            group=GROUP,
            query=_naming_pods(_recent_xids(t, f'xid!~"{critical}"'), "node, gpu", "xid"),
            op=">",
            threshold=0,
            for_="0m",
            severity="warning",
            summary=(
                "GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $labels.xid }} ({{ $value }} in "
                f"{t.gpu_xid_window})."
            ),
            description=(
                "Mostly an application fault (a bad kernel, an illegal address) or a recovered error; repeated, "
                "it precedes a fatal one. " + xid_text
            ),
        ),
        Alert(
            name="LLMGPURowRemapFailed",
            group=GROUP,
            query=_naming_pods("llm_gpu_row_remap_failed", "node, gpu"),
            op=">",
            threshold=0,
            for_=t.gpu_row_remap_failed_for,
            severity="critical",
            summary="GPU {{ $labels.gpu }} on {{ $labels.node }} failed to remap a memory row.",
            description=(
                "A bank has no spare rows left: the next uncorrectable error cannot be repaired. Drain the node and "
                "have the GPU replaced. " + _PODS_ON_IT
            ),
        ),
        Alert(
            name="LLMGPUUnhealthyInKubernetes",
            group=GROUP,
            query="llm_node_gpus_unhealthy",
            op=">",
            threshold=0,
            for_=t.gpu_unhealthy_for,
            severity="warning",
            summary="Node {{ $labels.node }} has {{ $value }} {{ $labels.resource }} it does not offer to pods.",
            description=(
                "The device plugin withdrew them (capacity above allocatable): it found them unhealthy (an XID, a "
                "failed health check). The node runs with fewer GPUs until they are reset or replaced; its "
                "exporter's llm_gpu_xid_errors_total and llm_gpu_up say which."
            ),
        ),
        Alert(
            name="LLMGPUMemoryHeldOutsidePods",
            group=GROUP,
            query=_naming_pods("llm_gpu_unattributed_memory_bytes", "node, gpu, uuid"),
            op=">",
            threshold=t.gpu_unattributed_memory_bytes,
            for_=t.gpu_unattributed_memory_for,
            severity="warning",
            summary=(
                "{{ $value | humanize1024 }}B on GPU {{ $labels.gpu }} ({{ $labels.uuid }}) on {{ $labels.node }} "
                "belong to no pod assigned this GPU."
            ),
            description=(
                "A host job, a process left over from a deleted pod, a debug container or a pod that sees GPUs it "
                "did not request holds this memory: the assigned pod runs out of memory below its budget. "
                "`nvidia-smi --query-compute-apps=pid,used_memory --format=csv` on the node lists the processes. "
                + _PODS_ON_IT
            ),
        ),
        Alert(
            name="LLMGPUAllocatedIdle",
            group=GROUP,
            query="llm_gpu_allocated_idle",
            op="==",
            threshold=1,
            for_=t.gpu_allocated_idle_for,
            severity="info",
            summary=(
                "{{ $labels.namespace }}/{{ $labels.pod }} holds GPU {{ $labels.gpu }} on {{ $labels.node }} and "
                "does not use it."
            ),
            description=(
                "The container assigned this GPU has had no process on it, or a near-zero utilisation, for the "
                "exporter's gpu.allocated_idle_seconds: the GPU is paid for and idle. Scale the workload down or "
                "give the GPU back."
            ),
        ),
    ]
