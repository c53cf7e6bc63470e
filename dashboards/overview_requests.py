"""The overview's rows that follow a request: the diagnosis (the verdicts of `llm-exporter diagnose`), users
(are they waiting?), queue (why?), routing (is the load spread?) and engine (prefill or decode bound, cache
pressure). Rows of `overview.dashboard.py`, in its order.
"""

from __future__ import annotations

from dashboards.lib import (
    ENGINE,
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

BY_MODEL = ("namespace", "model")


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
            first=("stage", "verdict"),
            hidden=("instance", "job"),  # the exporter that scraped the inputs: not where the verdict holds
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
