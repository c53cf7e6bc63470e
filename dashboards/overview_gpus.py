"""The overview's rows under the engine: the GPUs (memory, bandwidth, faults, waste) and their placement (can
another replica be scheduled?). Rows of `overview.dashboard.py`, in its order.
"""

from __future__ import annotations

from dashboards.lib import (
    ENGINE,
    NODE,
    SOURCE,
    Query,
    Row,
    selector,
    stat,
    table,
    timeseries,
)

AUTOSCALER = "namespace, workload, autoscaler, kind"


# --- GPU health and waste: faults that page, memory of no pod, idle assignments --------------------------
GPU_HEALTH_PANELS = [
    timeseries(
        "XID and ECC errors",
        [
            Query(
                f"sum by (node, gpu, xid) (increase({selector('llm_gpu_xid_errors_total', NODE)}[$__rate_interval]))",
                "XID {{xid}} {{node}} gpu {{gpu}}",
            ),
            Query(
                f"sum by (node, gpu, type) (increase({selector('llm_gpu_ecc_errors_total', NODE)}[$__rate_interval]))",
                "ECC {{type}} {{node}} gpu {{gpu}}",
            ),
        ],
        unit="short",
        description="XIDs the driver reported (NVML events) and ECC errors counted, per interval. A fatal XID "
        "(48, 79, 95, ...: the runbook's table) pages; uncorrected ECC errors on Ampere and newer are repaired by "
        "row remapping at the next GPU reset.",
    ),
    timeseries(
        "Row remapping",
        [
            Query(selector("llm_gpu_remapped_rows", NODE), "{{state}} rows {{node}} gpu {{gpu}}"),
            Query(selector("llm_gpu_row_remap_pending", NODE), "pending {{node}} gpu {{gpu}}"),
            Query(selector("llm_gpu_row_remap_failed", NODE), "failed {{node}} gpu {{gpu}}"),
        ],
        unit="short",
        description="DRAM rows remapped to spares (Ampere and newer), a remapping waiting for a GPU reset, and a "
        "failed remapping (no spare left: replace the GPU). Volta GPUs retire pages instead "
        "(llm_gpu_retired_pages).",
    ),
    timeseries(
        "GPU memory per pod and outside pods",
        [
            Query(
                selector("llm_gpu_pod_memory_used_bytes", f"{NODE}, {SOURCE}"),
                "{{namespace}}/{{pod}} {{node}} gpu {{gpu}}",
            ),
            Query(selector("llm_gpu_unattributed_memory_bytes", NODE), "no assigned pod {{node}} gpu {{gpu}}"),
        ],
        unit="bytes",
        stacked=True,
        description="GPU memory held by each pod's own processes (several pods on a shared GPU each count their "
        "own) and by processes of no pod assigned the GPU: host jobs, leftovers of deleted pods, debug containers. "
        "The latter is why a replica runs out of memory below its budget.",
    ),
    timeseries(
        "Assigned GPUs left idle",
        [
            Query(
                f"sum by (namespace) ({selector('llm_gpu_allocated_idle', f'{NODE}, {SOURCE}')})",
                "{{namespace}}",
            )
        ],
        unit="short",
        stacked=True,
        width=24,
        description="GPUs assigned to a container that has run no process on them, or kept them near 0 % busy, "
        "for gpu.allocated_idle_seconds; per namespace. The area over time is idle GPU-hours.",
    ),
]

gpu = Row(
    "GPU: memory, bandwidth, utilisation",
    [
        timeseries(
            "GPU memory used and total",
            [
                Query(selector("llm_gpu_memory_used_bytes", NODE), "used {{node}} gpu {{gpu}}"),
                Query(selector("llm_gpu_memory_total_bytes", NODE), "total {{node}} gpu {{gpu}}"),
            ],
            unit="bytes",
            description="GPU memory in use against the total. vLLM preallocates gpu-memory-utilization (0.9 by "
            "default) at start, so ~90% is normal; close to 100% risks out-of-memory on CUDA graph capture or "
            "other processes on the GPU.",
        ),
        timeseries(
            "Memory bandwidth used vs peak",
            [
                Query(
                    f"{selector('llm_gpu_memory_bandwidth_utilization_ratio', NODE)} * "
                    f"{selector('llm_gpu_memory_bandwidth_max_bytes_per_second', NODE)}",
                    "used {{node}} gpu {{gpu}}",
                ),
                Query(selector("llm_gpu_memory_bandwidth_max_bytes_per_second", NODE), "peak {{node}} gpu {{gpu}}"),
            ],
            unit="Bps",
            description="DRAM bandwidth used against the theoretical peak (Hopper and newer). Decode is "
            "bandwidth-bound: near the peak, more concurrency will not raise token throughput; add GPUs instead.",
        ),
        timeseries(
            "Memory bandwidth by model",
            [
                Query(
                    "max by (namespace, model) (max by (namespace, pod) ("
                    "(llm_gpu_memory_bandwidth_utilization_ratio or llm_gpu_memory_busy_ratio)"
                    f" * on (uuid) group_left (namespace, pod) {selector('llm_gpu_pod_info', SOURCE)})"
                    " * on (namespace, pod) group_left (model) group by (namespace, pod, model) ("
                    f"{selector('llm_requests_running', ENGINE)}))",
                    "{{namespace}}/{{model}}",
                )
            ],
            unit="percentunit",
            max_value=1,
            description="The busiest GPU of each selected model's pods (joined through Pod per GPU): memory "
            "bandwidth used over peak on Hopper and newer, memory busy time elsewhere. Near 1 with inter-token "
            "latency rising, decode is bandwidth-bound.",
        ),
        timeseries(
            "GPU utilisation",
            [Query(selector("llm_gpu_utilization_ratio", NODE), "{{node}} gpu {{gpu}}")],
            unit="percentunit",
            max_value=1,
            description="Fraction of time a kernel ran. 100% does not mean saturated (one tiny kernel counts): judge "
            "load by the queue and memory bandwidth, and treat a drop to 0 while requests wait as a stuck engine.",
        ),
        table(
            "Pod per GPU",
            [Query(selector("llm_gpu_pod_info", NODE))],
            unit="none",
            width=24,
            description="Which pod and container holds each GPU (from the kubelet). A GPU with no row is idle "
            "capacity; a pod missing here while it requests GPUs means the pod-resources socket is not mounted.",
        ),
        *GPU_HEALTH_PANELS,
    ],
)

PLACEMENT_HEALTH_PANELS = [
    timeseries(
        "GPUs withdrawn by the device plugin",
        [Query(selector("llm_node_gpus_unhealthy", NODE), "{{node}} {{resource}}")],
        unit="short",
        width=24,
        description="GPUs a node has but does not offer (capacity minus allocatable): the device plugin found them "
        "unhealthy. They explain a node with fewer free GPUs than it holds; the node's XIDs say why.",
    ),
]

placement = Row(
    "Placement: can another replica be scheduled?",
    [
        timeseries(
            "Free GPUs per node",
            [Query(selector("llm_node_gpus_free", NODE), "{{node}} {{resource}}")],
            unit="short",
            description="Free GPUs on each node. Many nodes with one or two free is fragmentation: a replica that "
            "needs more GPUs than the largest free block stays Pending. Drain or bin-pack small pods.",
        ),
        stat(
            "Free GPUs vs largest free block",
            [
                Query("sum by (resource) (llm_cluster_gpus_free)", "free {{resource}}"),
                Query("max by (resource) (llm_cluster_gpus_largest_free_block)", "largest block {{resource}}"),
            ],
            unit="short",
            width=8,
            description="Free GPUs in the cluster and the biggest request that fits on one node now. Free well above "
            "the largest block means capacity exists but is fragmented across nodes.",
        ),
        timeseries(
            "Pending GPU pods by reason",
            # every pending pod, not only the bounded per-pod series
            [Query("sum by (resource, reason) (llm_cluster_pending_pods)", "{{reason}} {{resource}}")],
            unit="short",
            stacked=True,
            description="Unschedulable GPU pods by why: fragmented (free GPUs exist but not on one node), "
            "insufficient, constrained (no eligible node), other_resources / pod_affinity / topology_spread (what "
            "keeps it off the nodes with free GPUs), fits, backoff (waits on a retry), quota / gated (scheduling "
            "gates: Kueue). Empty when nothing is pending; see the runbook for each reason.",
        ),
        timeseries(
            "Cold start by phase",
            [
                Query(
                    f"histogram_quantile({q}, sum by (le, namespace, workload, phase) "
                    f"(increase({selector('llm_replica_startup_seconds_bucket', SOURCE)}[$__range])))",
                    f"p{round(q * 100)} {{{{phase}}}} {{{{namespace}}}}/{{{{workload}}}}",
                )
                for q in (0.5, 0.99)
            ],
            unit="s",
            width=12,
            description="How long new engine replicas took over the time shown: scheduling (created to placed on a "
            "node), starting (placed to Ready: image, weights, warm-up) and first_token (Ready to the first request "
            "served, to the scrape interval; from the node exporters' discovered pods). The autoscaler is late by "
            "the sum: set minimum replicas so that the queue can wait that long.",
        ),
        timeseries(
            "Replicas ready and starting",
            [
                Query(
                    f"sum by (namespace, workload) ({selector('llm_replica_ready', SOURCE)})",
                    "ready {{namespace}}/{{workload}}",
                ),
                Query(
                    f"sum by (namespace, workload) ({selector('llm_replica_starting', SOURCE)})",
                    "starting {{namespace}}/{{workload}}",
                ),
            ],
            unit="short",
            width=12,
            description="Engine pods Ready and still starting per workload. Starting pods while requests queue are "
            "capacity on its way: compare the wait with Cold start by phase; a pod starting for long is stuck "
            "(LLMReplicaStartupSlow).",
        ),
        timeseries(
            "Autoscaler replicas",
            [
                Query(
                    f"max by ({AUTOSCALER}) ({selector(f'llm_autoscaler_{what}_replicas', SOURCE)})",
                    f"{what} {{{{namespace}}}}/{{{{workload}}}} ({{{{kind}}}} {{{{autoscaler}}}})",
                )
                for what in ("desired", "current", "min", "max")
            ],
            unit="short",
            width=12,
            description="The HPA of each engine workload (KEDA's too: a ScaledObject drives one): replicas asked "
            "for, there now, and the bounds. Desired above ready is capacity on its way (Cold start by phase); "
            "desired at the maximum cannot grow (LLMAutoscalerMaxedOut). Empty without an autoscaler.",
        ),
        timeseries(
            "Autoscaler held at a limit",
            [
                Query(selector("llm:autoscaler_at_max", SOURCE), "at max {{namespace}}/{{workload}}"),
                Query(
                    selector("llm:autoscaler_at_min_while_queue_grows", SOURCE),
                    "at min, queue growing {{namespace}}/{{workload}}",
                ),
                Query(selector("llm:workload_requests_waiting", SOURCE), "waiting {{namespace}}/{{workload}}"),
            ],
            unit="short",
            width=12,
            description="1 while the autoscaler asks for its maximum, or stays at its minimum although the "
            "workload's queue grows (its trigger misses the queue or reacts late), beside the requests waiting "
            "across the workload's replicas (the engine series joined to their pods' workload).",
        ),
        *PLACEMENT_HEALTH_PANELS,
    ],
)
