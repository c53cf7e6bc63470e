# ruff: noqa: N999 - grafanalib's loader convention: a `dashboard` variable in a *.dashboard.py file
"""The one shared link: the story of one request, from the user's wait down to the GPU and its placement.

Read top to bottom: the diagnosis (the verdicts of `llm-exporter diagnose`), users (are they waiting?), queue
(why?), engine (prefill or decode bound, cache pressure), GPU (memory, bandwidth), placement (can another
replica be scheduled?), telemetry health (can these panels be trusted?). Regenerate with `python -m exporter.bundle`.
"""

from __future__ import annotations

from dashboards.lib import (
    ENGINE,
    NODE,
    SOURCE,
    Query,
    Row,
    quantile,
    rate,
    selector,
    stat,
    state_timeline,
    table,
    timeseries,
)
from dashboards.lib import dashboard as build_dashboard

UID = "llm-inference-overview"
BY_MODEL = ("namespace", "model")
AUTOSCALER = "namespace, workload, autoscaler, kind"


def _latency(metric: str, qs: tuple[float, ...]) -> list[Query]:
    legend = "{{namespace}}/{{model}}"
    return [Query(quantile(q, metric, ENGINE, BY_MODEL), f"p{round(q * 100)} {legend}") for q in qs]


# Diagnosis: the verdicts of `llm-exporter diagnose` as recording rules (llm:diagnosis), so that the platform
# and the application teams open one link and read the same answer before any graph.
_DIAGNOSIS = selector("llm:diagnosis", SOURCE)

diagnosis = Row(
    "Diagnosis: which stage makes users wait, and who owns the fix",
    [
        table(
            "Verdicts holding now",
            [Query(_DIAGNOSIS, "")],
            unit="short",
            width=16,
            description="One line per verdict of `llm-exporter diagnose` that holds now (recording rule "
            "llm:diagnosis): stage (routing, scaling, placement, engine, ingress, telemetry), verdict, and where "
            "(namespace, model, pod, workload, route); the value is the condition's (a share, GPUs, seconds). Empty "
            "is good. docs/diagnose.md gives each verdict's fix and owner; the command adds the evidence.",
        ),
        timeseries(
            "Verdicts by stage",
            [Query(f"count by (stage, verdict) ({_DIAGNOSIS})", "{{stage}} {{verdict}}")],
            unit="short",
            width=8,
            description="How many places each verdict held over time: when a stage started to make users wait. "
            "Telemetry verdicts (a missing canonical series, an engine down) come first: the others rest on them.",
        ),
    ],
)

users = Row(
    "Users: is anyone waiting?",
    [
        timeseries(
            "Time to first token",
            _latency("llm_time_to_first_token_seconds", (0.5, 0.95, 0.99)),
            unit="s",
            width=12,
            description="How long users wait for the first token (p50/p95/p99 per model). A rising p99 with a flat "
            "p50 is queueing: check Requests waiting and Queue time below, then add replicas. A rising p50 too "
            "means slow prefill: long prompts or a saturated GPU.",
        ),
        timeseries(
            "Inter-token latency p99",
            _latency("llm_inter_token_latency_seconds", (0.99,)),
            unit="s",
            width=6,
            description="Gap between streamed tokens (p99): the typing speed users see. High values mean decode is "
            "starved: too many concurrent sequences for the memory bandwidth, or preemptions. Check KV cache usage "
            "and memory bandwidth below.",
        ),
        timeseries(
            "End-to-end request latency",
            _latency("llm_request_duration_seconds", (0.5, 0.99)),
            unit="s",
            width=6,
            description="Arrival to last token (p50/p99). Grows with output length as well as load: compare with "
            "TTFT and ITL to see which phase grew before acting.",
        ),
    ],
)

queue = Row(
    "Queue: why are they waiting?",
    [
        timeseries(
            "Requests waiting and running",
            [
                Query(
                    f"sum by (namespace, model) ({selector('llm_requests_waiting', ENGINE)})",
                    "waiting {{namespace}}/{{model}}",
                ),
                Query(
                    f"sum by (namespace, model) ({selector('llm_requests_running', ENGINE)})",
                    "running {{namespace}}/{{model}}",
                ),
            ],
            unit="short",
            width=12,
            description="Requests queued versus being processed. Any sustained waiting means users wait whatever "
            "the GPU utilisation says: scale out, or raise max-num-seqs if the KV cache has room.",
        ),
        timeseries(
            "Queue time p99",
            _latency("llm_request_queue_time_seconds", (0.99,)),
            unit="s",
            width=6,
            description="Time requests spent queued before the engine scheduled them (p99). When this is most of "
            "TTFT the fix is capacity (replicas, or routing away from hot pods), not a faster GPU.",
        ),
        timeseries(
            "Finished requests by reason",
            [Query(f"sum by (finished_reason) ({rate('llm_requests_finished_total', ENGINE)})", "{{finished_reason}}")],
            unit="reqps",
            width=6,
            stacked=True,
            description="Completed requests per second by finish reason. A growing share of 'abort' means clients "
            "give up (timeouts): look at TTFT; 'length' means outputs hit max_tokens.",
        ),
    ],
)

routing = Row(
    "Routing: is the load spread over the replicas?",
    [
        timeseries(
            "Queue per replica",
            [Query(selector("llm:replica_requests_waiting", ENGINE), "{{namespace}}/{{pod}} {{model}}")],
            unit="short",
            width=10,
            description="Requests waiting on each replica (data-parallel ranks summed). One replica queueing while "
            "its siblings idle is routing, not capacity: requests or connections pinned to one pod. Use a "
            "load-aware router; adding replicas will not help.",
        ),
        timeseries(
            "Queue spread across replicas",
            [
                Query(selector("llm:replica_queue_spread", ENGINE), "max - min {{namespace}}/{{model}}"),
                Query(selector("llm:replica_queue_max_over_mean", ENGINE), "max / mean {{namespace}}/{{model}}"),
            ],
            unit="short",
            width=7,
            description="How unevenly one model's queue is spread: the longest minus the shortest replica queue, and "
            "the longest over the mean (1 is even). A high ratio for minutes is what LLMLoadImbalance alerts on.",
        ),
        timeseries(
            "Prefix cache hit ratio per replica",
            [Query(selector("llm:replica_prefix_cache_hit_ratio", ENGINE), "{{namespace}}/{{pod}}")],
            unit="percentunit",
            width=7,
            max_value=1,
            description="Share of prompt lookups served from each replica's prefix cache. One replica far below its "
            "siblings gets the shared prefixes of nobody: route by prefix, or expect its TTFT to be higher.",
        ),
        timeseries(
            "Route timeout vs request duration p99",
            [
                Query(
                    f"min by (namespace, route, kind) ({selector('llm_route_timeout_seconds', SOURCE)})",
                    "timeout {{kind}} {{namespace}}/{{route}}",
                ),
                *_latency("llm_request_duration_seconds", (0.99,)),
            ],
            unit="s",
            width=16,
            description="The shortest timeout of each Ingress or HTTPRoute in front of the engines against the "
            "request duration p99. A p99 near a timeout means long generations are cut mid-stream: users see a "
            "broken answer. Raise the route timeout or cap max_tokens.",
        ),
        stat(
            "Routes that buffer",
            [Query(f"sum({selector('llm_route_buffering', SOURCE)})", "buffering routes")],
            unit="short",
            width=8,
            description="Routes in front of the engines whose proxy buffers responses (ingress-nginx proxy-buffering "
            "on). Above 0, streamed tokens reach users in bursts: turn buffering off for streaming routes.",
        ),
    ],
)

# llm:bottleneck is one series per model with the class as a label; as codes, one band per model
_BOTTLENECK_CODES = (("none", 0), ("compute", 1), ("memory_bandwidth", 2), ("kv_capacity", 3))
_BOTTLENECK = " or ".join(
    f"{code} * " + selector("llm:bottleneck", ENGINE + f', resource="{name}"') for name, code in _BOTTLENECK_CODES
)

engine = Row(
    "Engine: prefill, decode and the KV cache",
    [
        state_timeline(
            "Bottleneck",
            [Query(f"max by (namespace, model) ({_BOTTLENECK})", "{{namespace}}/{{model}}")],
            states=(
                (0, "none", "green"),
                (1, "compute (prefill)", "yellow"),
                (2, "memory bandwidth", "orange"),
                (3, "KV cache capacity", "red"),
            ),
            description="Which resource binds each model now (recording rule llm:bottleneck): KV cache capacity "
            "(full with requests waiting, or preemptions), memory bandwidth (its GPUs near peak while decoding), "
            "compute (requests wait with KV and bandwidth to spare) or none. The runbook says what to do for each.",
        ),
        timeseries(
            "Prefill vs decode time p99",
            [
                Query(
                    quantile(0.99, "llm_request_prefill_time_seconds", ENGINE, BY_MODEL),
                    "prefill {{namespace}}/{{model}}",
                ),
                Query(
                    quantile(0.99, "llm_request_decode_time_seconds", ENGINE, BY_MODEL),
                    "decode {{namespace}}/{{model}}",
                ),
            ],
            unit="s",
            description="Time per request spent processing the prompt versus generating tokens (p99). Prefill-bound "
            "(long prompts): consider chunked prefill or prefix caching; decode-bound: fewer concurrent sequences "
            "per GPU or more replicas.",
        ),
        timeseries(
            "Prompt vs completion tokens",
            [
                Query(
                    f"sum by (namespace, model) ({rate('llm_prompt_tokens_total', ENGINE)})",
                    "prompt {{namespace}}/{{model}}",
                ),
                Query(
                    f"sum by (namespace, model) ({rate('llm_generation_tokens_total', ENGINE)})",
                    "completion {{namespace}}/{{model}}",
                ),
            ],
            unit="suffix:tok/s",
            description="Token throughput: prompt tokens prefilled and completion tokens generated per second. A "
            "drop while requests wait means the engine is stalled (preemptions, GPU trouble); compare with the GPU "
            "row.",
        ),
        timeseries(
            "KV cache usage",
            [
                Query(
                    f"max by (namespace, pod, model) ({selector('llm_kv_cache_usage_ratio', ENGINE)})",
                    "{{namespace}}/{{pod}} {{model}}",
                )
            ],
            unit="percentunit",
            max_value=1,
            description="Fraction of the KV cache in use per engine. Near 100% new requests queue and running ones "
            "get preempted: add replicas, shorten max-model-len, or raise gpu-memory-utilization.",
        ),
        timeseries(
            "Preemptions",
            [
                Query(
                    f"sum by (namespace, pod, model) ({rate('llm_preemptions_total', ENGINE)})",
                    "{{namespace}}/{{pod}} {{model}}",
                )
            ],
            unit="ops",
            description="Requests evicted from the KV cache and recomputed later, per second. Any steady rate wastes "
            "GPU time and inflates ITL: the KV cache is too small for the concurrency; see KV cache usage.",
        ),
        timeseries(
            "Prefix cache hit ratio",
            [
                Query(
                    f"sum by (namespace, model) ({rate('llm_prefix_cache_hits_total', ENGINE)}) / "
                    f"sum by (namespace, model) ({rate('llm_prefix_cache_queries_total', ENGINE)})",
                    "{{namespace}}/{{model}}",
                )
            ],
            unit="percentunit",
            max_value=1,
            description="Share of prompt lookups served from the prefix cache. A drop after a deploy or routing "
            "change means shared prefixes no longer land on the same pod: check prefix-aware routing. Empty when "
            "there were no lookups.",
        ),
    ],
)

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

health = Row(
    "Telemetry health: can these panels be trusted?",
    [
        timeseries(
            "Engines up",
            [
                Query(f"sum by (namespace) ({selector('llm_engine_up', SOURCE)})", "up {{namespace}}"),
                Query(f"count by (namespace) ({selector('llm_engine_up', SOURCE)})", "targets {{namespace}}"),
            ],
            unit="short",
            description="Engine targets the exporter scraped successfully, against all targets. A gap means an "
            "engine's /metrics is unreachable: its panels above go blank for that pod. See llm_engine_scrape_error "
            "for the reason.",
        ),
        table(
            "Engine versions",
            [Query(f"count by (engine, version, version_source) ({selector('llm_engine_info', SOURCE)})")],
            unit="short",
            width=8,
            description="Engine releases running, with how the version was learnt. Mixed versions during a rollout "
            "are expected; a version_source of 'inferred' means the engine gave no version and it was read from "
            "its metric names: the mapping may be guessing, check missing series.",
        ),
        timeseries(
            "Missing canonical series",
            [
                Query(
                    f"sum by (namespace, pod, version) (1 - {selector('llm_metric_present', SOURCE)})",
                    "{{namespace}}/{{pod}} {{version}}",
                )
            ],
            unit="short",
            description="Canonical series the running engine version should expose but does not: the silent-rename "
            "alarm. Above 0, some panels here (and autoscalers on those names) read nothing; see the runbook "
            "entry LLMMetricMissing.",
        ),
        timeseries(
            "Unmapped engine metrics",
            [
                Query(
                    f"sum by (namespace, pod) ({selector('llm_engine_unmapped_metrics', SOURCE)})",
                    "{{namespace}}/{{pod}}",
                )
            ],
            unit="short",
            description="Engine metric families no known release exposes: early warning of a new rename. A jump "
            "after an engine upgrade means the exporter needs a mapping update before a series goes missing.",
        ),
        timeseries(
            "Exporter collectors succeeding",
            [Query("min by (instance, collector) (llm_exporter_collector_success)", "{{instance}} {{collector}}")],
            unit="short",
            max_value=1,
            description="1 when each exporter collector's last run succeeded. A 0 means that part of the view is "
            "stale or missing: read the exporter logs for the collector named here.",
        ),
    ],
)


# Deployment checks (the cluster role's audit): the failing checks of each engine workload, with the fix
_CHECK_LABELS = "namespace, kind, workload, check, severity"


def _checks_row() -> Row:
    from exporter.audit.checks import CHECKS

    failing = table(
        "Failing deployment checks",
        [Query(f"max by ({_CHECK_LABELS}) ({selector('llm_workload_check_failing', SOURCE)}) == 1")],
        unit="short",
        width=18,
        description="Each engine workload's failing checks against the write-ups' checklist (the check column "
        "shows its fix). `llm-exporter audit -n NAMESPACE` prints the reason and the threshold it used (measured "
        "start-up or the default); the runbook has a section per check. Empty: nothing fails.",
    )
    # the check id shown with its fix: the series carry the id only
    mapping = {c.id: {"text": f"{c.id}: {c.fix}", "index": i} for i, c in enumerate(CHECKS)}
    failing.panel.overrides = [
        {
            "matcher": {"id": "byName", "options": "check"},
            "properties": [{"id": "mappings", "value": [{"type": "value", "options": mapping}]}],
        }
    ]
    return Row(
        "Deployment checks: will it hold under load?",
        [
            failing,
            stat(
                "Failing checks",
                [Query(f"sum({selector('llm_workload_check_failing', SOURCE)})", "failing checks")],
                unit="short",
                width=6,
                description="Checks failing across the engine workloads (0: every applicable check passes). A "
                "setting, not an incident: it costs at the next burst, node upgrade or long generation.",
            ),
        ],
    )


deployment_checks = _checks_row()


# Capacity in tokens (the llm-inference.capacity and llm-inference.cost rules): how much one GPU takes, which
# resource runs out first, and what a token costs. Appended after the other rows: their panel ids stay put.
_MODEL = 'namespace=~"$namespace", model=~"$model"'  # recorded per model: no engine label
_RANK = "namespace, pod, dp_rank"

capacity = Row(
    "Capacity: how many tokens can a GPU take, and at what cost?",
    [
        timeseries(
            "Tokens per second per GPU",
            [
                Query(selector("llm:prompt_tokens_per_gpu:rate5m", _MODEL), "prompt {{namespace}}/{{model}}"),
                Query(selector("llm:generation_tokens_per_gpu:rate5m", _MODEL), "completion {{namespace}}/{{model}}"),
            ],
            unit="short",
            description="Tokens each GPU serving the model processes per second: prompt tokens (prefill, the "
            "compute-heavy part) and completion tokens (decode, bounded by memory bandwidth) apart. Capacity is "
            "planned in tokens per second, not requests: compare this with the rate at which time to first token "
            "degrades to find what one GPU can take. A GPU shared by two pods is counted once.",
        ),
        timeseries(
            "MFU and MBU per model",
            [
                Query(selector("llm:model_flops_utilization", _MODEL), "MFU {{namespace}}/{{model}}"),
                Query(selector("llm:model_bandwidth_utilization", _MODEL), "MBU {{namespace}}/{{model}}"),
            ],
            unit="percentunit",
            max_value=1,
            description="Model FLOPs utilisation (the engine's estimated FLOPs over the GPU's datasheet peak) and "
            "model bandwidth utilisation (its estimated bytes read over the GPU's peak memory bandwidth). The "
            "higher one says what binds: MFU high, the GPU computes as fast as it can (prefill-bound); MBU high, "
            "it reads memory as fast as it can (decode-bound). Needs vLLM's --enable-mfu-metrics.",
        ),
        timeseries(
            "KV cache in tokens",
            [
                Query(
                    f"max by ({_RANK}) ({selector('llm_kv_cache_capacity_tokens', SOURCE)})",
                    "capacity {{namespace}}/{{pod}}",
                ),
                Query(
                    # SGLang counts the tokens held; vLLM says the share of blocks used, of its capacity in tokens
                    f"max by ({_RANK}) ({selector('llm_kv_cache_used_tokens', SOURCE)}) or max by ({_RANK}) "
                    f"({selector('llm_kv_cache_capacity_tokens', SOURCE)}) * on ({_RANK}) max by ({_RANK}) "
                    f"({selector('llm_kv_cache_usage_ratio', SOURCE)})",
                    "used {{namespace}}/{{pod}}",
                ),
                Query(selector("llm:kv_cache_headroom_tokens", SOURCE), "headroom {{namespace}}/{{pod}}"),
            ],
            unit="short",
            description="The KV cache holds the attention state of every request in flight, in tokens. Capacity "
            "is what the engine sized at start-up; used is what requests hold now (SGLang counts it; for vLLM it is "
            "the capacity times its usage ratio, block by block, as is the headroom). Headroom near 0 means new "
            "requests wait or running ones are preempted.",
        ),
        timeseries(
            "Context reserved vs used",
            [
                Query(
                    f"max by (namespace, model) ({selector('llm_engine_max_context_tokens', ENGINE)})",
                    "limit {{namespace}}/{{model}}",
                ),
                Query(selector("llm:request_context_tokens:p99_1h", _MODEL), "p99 used {{namespace}}/{{model}}"),
            ],
            unit="short",
            description="The context limit the engine accepts (vLLM --max-model-len) against the p99 prompt plus "
            "the p99 generation length of the last hour. A limit many times what requests use reserves KV cache "
            "and batch room for contexts nobody sends (alert LLMContextOversized).",
        ),
        timeseries(
            "Rejected and preempted requests",
            [
                Query(
                    f"sum by (namespace, model) ({rate('llm_requests_rejected_total', ENGINE)})",
                    "rejected {{namespace}}/{{model}}",
                ),
                Query(
                    f"sum by (namespace, model) ({rate('llm_preemptions_total', ENGINE)})",
                    "preempted {{namespace}}/{{model}}",
                ),
            ],
            unit="reqps",
            description="Requests per second refused by the engine's admission control before they queue "
            "(clients get errors), and running requests evicted to free KV cache (the GPU redoes their work). "
            "Either above 0 for long means the replica is past its capacity: add replicas or lower max-num-seqs.",
        ),
        timeseries(
            "Cost per million tokens and idle GPU-hours",
            [
                Query(
                    selector("llm:model_cost_per_million_tokens:rate1h", _MODEL),
                    "{{currency}} per 1M tokens {{namespace}}/{{model}}",
                ),
                Query(
                    f"avg_over_time({selector('llm:model_gpus_idle', _MODEL)}[1h])",
                    "idle GPU-hours (last hour) {{namespace}}/{{model}}",
                ),
            ],
            unit="short",
            description="What a million tokens (prompt and completion) of the model cost over the last hour, "
            "from the price per GPU-hour set in the cluster role (cost.gpu_hour_prices; no price set: no line), "
            "and the GPU-hours of the last hour its pods held without serving a token: paid for, unused.",
        ),
    ],
)

dashboard = build_dashboard(
    title="LLM inference: overview",
    uid=UID,
    description="Is anyone waiting on LLM inference, and why: users, queue, engine, GPU, placement, telemetry.",
    rows=[diagnosis, users, queue, routing, engine, gpu, placement, health, deployment_checks, capacity],
    tags=["llm-inference-exporter", "llm", "vllm", "gpu"],
)
