"""Engine metrics (node role): vLLM's series under stable `llm_*` names, plus mapping health."""

from __future__ import annotations

from functools import partial

from exporter.catalogue.spec import MetricSpec, Stability, counter, gauge, histogram

SOURCE = ("namespace", "pod", "engine")  # identity of one engine target
SERIES = (*SOURCE, "model", "dp_rank")  # identity of one engine series

_g = partial(gauge, subsystem="engine", role="node")
_c = partial(counter, subsystem="engine", role="node")
_h = partial(histogram, subsystem="engine", role="node")

REQUESTS_RUNNING = _g("llm_requests_running", "Requests currently being processed by the engine.", SERIES)
REQUESTS_WAITING = _g(
    "llm_requests_waiting", "Requests queued and waiting to be scheduled: users who are waiting.", SERIES
)
KV_CACHE_USAGE = _g(
    "llm_kv_cache_usage_ratio", "Fraction of the KV cache in use (0-1); 1 means full.", SERIES, unit="ratio"
)
TIME_TO_FIRST_TOKEN = _h(
    "llm_time_to_first_token_seconds", "Time from request arrival to the first generated token.", SERIES
)
INTER_TOKEN_LATENCY = _h(
    "llm_inter_token_latency_seconds", "Time between two consecutive generated tokens of one request.", SERIES
)
REQUEST_DURATION = _h("llm_request_duration_seconds", "End-to-end request latency, arrival to last token.", SERIES)
REQUEST_QUEUE_TIME = _h("llm_request_queue_time_seconds", "Time a request spent waiting in the queue.", SERIES)
REQUEST_PREFILL_TIME = _h(
    "llm_request_prefill_time_seconds", "Time a request spent in the prefill phase (prompt processing).", SERIES
)
REQUEST_DECODE_TIME = _h(
    "llm_request_decode_time_seconds", "Time a request spent in the decode phase (token generation).", SERIES
)
REQUEST_TIME_PER_OUTPUT_TOKEN = _h(
    "llm_request_time_per_output_token_seconds",
    "Per-request mean time per output token after the first (TPOT), one observation per request; not the "
    "per-token gaps of llm_inter_token_latency_seconds (SGLang 0.5.22+, trtllm-serve).",
    SERIES,
    stability=Stability.EXPERIMENTAL,
)
PROMPT_TOKENS = _c("llm_prompt_tokens_total", "Prompt tokens processed (prefill).", SERIES)
GENERATION_TOKENS = _c("llm_generation_tokens_total", "Tokens generated (decode).", SERIES)
PREFIX_CACHE_QUERIES = _c(
    "llm_prefix_cache_queries_total",
    "Prefix-cache lookups. The unit changed from blocks to tokens in vLLM 0.9.0; use ratios with hits.",
    SERIES,
)
PREFIX_CACHE_HITS = _c("llm_prefix_cache_hits_total", "Prefix-cache hits, in the unit of the queries.", SERIES)
PREEMPTIONS = _c("llm_preemptions_total", "Requests preempted by the engine (KV cache pressure).", SERIES)
REQUESTS_FINISHED = _c(
    "llm_requests_finished_total",
    "Requests finished, by reason (stop, length, abort, ...).",
    (*SERIES, "finished_reason"),
)

# Capacity in tokens: what decides whether a replica keeps up (KV cache, context, lengths, compute, shedding)
KV_CACHE_CAPACITY_TOKENS = _g(
    "llm_kv_cache_capacity_tokens",
    "Tokens the engine's KV cache holds when full, as the engine sized it at start-up (vLLM: its KV cache "
    "size in tokens, else GPU blocks x block size; SGLang: max_total_num_tokens).",
    SERIES,
    unit="",
    stability=Stability.EXPERIMENTAL,
)
KV_CACHE_USED_TOKENS = _g(
    "llm_kv_cache_used_tokens",
    "Tokens held in the KV cache now (SGLang kv_used_tokens); absent where the engine counts only a ratio.",
    SERIES,
    unit="",
    stability=Stability.EXPERIMENTAL,
)
REQUEST_PROMPT_TOKENS = _h(
    "llm_request_prompt_tokens",
    "Prompt length of each finished request, in tokens.",
    SERIES,
    unit="",
    stability=Stability.EXPERIMENTAL,
)
REQUEST_GENERATION_TOKENS = _h(
    "llm_request_generation_tokens",
    "Tokens generated for each finished request.",
    SERIES,
    unit="",
    stability=Stability.EXPERIMENTAL,
)
REQUESTS_WAITING_BY_REASON = _g(
    "llm_requests_waiting_by_reason",
    "Requests waiting, by why: capacity (no room in the KV cache or batch) or deferred (vLLM 0.20+).",
    (*SERIES, "reason"),
    stability=Stability.EXPERIMENTAL,
)
REQUESTS_REJECTED = _c(
    "llm_requests_rejected_total",
    "Requests the engine's admission control refused (load shed by a queue limit), by reason (vLLM 0.32+).",
    (*SERIES, "reason"),
    stability=Stability.EXPERIMENTAL,
)
PROMPT_TOKENS_CACHED = _c(
    "llm_prompt_tokens_cached_total",
    "Prompt tokens served from a cache instead of computed (vLLM: local and external KV caches, 0.16+).",
    SERIES,
    stability=Stability.EXPERIMENTAL,
)
ESTIMATED_FLOPS = _c(
    "llm_estimated_flops_per_gpu_total",
    "Floating point operations the engine estimates it ran, per GPU (vLLM 0.17+ with --enable-mfu-metrics, "
    "SGLang 0.5.10+); absent while the engine counts none.",
    SERIES,
    stability=Stability.EXPERIMENTAL,
)
ESTIMATED_READ_BYTES = _c(
    "llm_estimated_read_bytes_per_gpu_total",
    "Bytes the engine estimates it read from GPU memory, per GPU (vLLM 0.17+ with --enable-mfu-metrics); "
    "absent while the engine counts none.",
    SERIES,
    unit="bytes",
    stability=Stability.EXPERIMENTAL,
)
SPEC_DECODE_DRAFT_TOKENS = _c(
    "llm_spec_decode_draft_tokens_total",
    "Tokens proposed by speculative decoding's draft (only with speculative decoding configured).",
    SERIES,
    stability=Stability.EXPERIMENTAL,
)
SPEC_DECODE_ACCEPTED_TOKENS = _c(
    "llm_spec_decode_accepted_tokens_total",
    "Draft tokens the target model accepted (only with speculative decoding configured).",
    SERIES,
    stability=Stability.EXPERIMENTAL,
)
ENGINE_ASLEEP = _g(
    "llm_engine_asleep",
    "1 while the engine sleeps (vLLM sleep mode: weights offloaded or discarded, serving nothing), 0 awake.",
    SERIES,
    stability=Stability.EXPERIMENTAL,
)
LORA_TOP_ADAPTERS = 16  # llm_lora_adapter_active: this many adapters by name, the rest as adapter="other"
LORA_ADAPTER_ACTIVE = _g(
    "llm_lora_adapter_active",
    "1 while the LoRA adapter has requests in flight (running or waiting), 0 for one that had some earlier in "
    f"the engine's life (vLLM lora_requests_info, --enable-lora). The {LORA_TOP_ADAPTERS} adapters active now "
    'first, then the most recently active, by name; the rest as adapter="other" (1 when any of them is '
    "active). vLLM names the adapters, not their request counts, and lists the same ones as running and waiting.",
    (*SERIES, "adapter"),
    stability=Stability.EXPERIMENTAL,
)
LORA_MAX_ADAPTERS = _g(
    "llm_lora_max_adapters",
    "LoRA adapter slots on the GPU: the most adapters one batch can use (vLLM --max-loras, from "
    "lora_requests_info's max_lora; SGLang lora_pool_slots_total, max_loras_per_batch).",
    SERIES,
    stability=Stability.EXPERIMENTAL,
)
LORA_SLOTS_USED = _g(
    "llm_lora_adapter_slots_used",
    "LoRA adapter slots occupied in GPU memory (SGLang lora_pool_slots_used, --enable-lora).",
    SERIES,
    stability=Stability.EXPERIMENTAL,
)

ENGINE_UP = _g("llm_engine_up", "1 when the last scrape of this engine target succeeded, else 0.", SOURCE)
ENGINE_INFO = _g(
    "llm_engine_info",
    "Engine version, value 1. version_source is 'endpoint' (from /version) or 'inferred' (from the metric "
    "names present).",
    (*SOURCE, "version", "version_source"),
)
METRIC_PRESENT = _g(
    "llm_metric_present",
    "1 when the source series the running engine version should expose for canonical `metric` was found, "
    "0 when it is missing (a silent rename or removal). The canonical series is then absent, never 0.",
    (*SOURCE, "metric", "source", "version"),
)
UNMAPPED_METRICS = _g(
    "llm_engine_unmapped_metrics",
    "Engine-prefixed metric families that no known engine release exposes: early warning of a new rename.",
    SOURCE,
)
SCRAPE_DURATION = _g(
    "llm_engine_scrape_duration_seconds",
    "Time taken to fetch and map this engine target's metrics.",
    SOURCE,
    unit="seconds",
)
SCRAPE_ERROR = _g(
    "llm_engine_scrape_error",
    "1 for the reason the last scrape of this target failed (timeout, connect, http_status, too_large, "
    "protocol: not HTTP or a broken answer, parse, metrics_disabled: the engine serves no metrics, e.g. "
    "llama.cpp without --metrics, credentials: the target's basic_auth.password_file cannot be read, internal: "
    "an error in the exporter's own scrape code), else absent.",
    (*SOURCE, "reason"),
)
MAX_CONTEXT_TOKENS = _g(
    "llm_engine_max_context_tokens",
    "Longest context (prompt + generation) the engine accepts for `model`, in tokens, as it answers at "
    "/v1/models (vLLM: max_model_len) or /props (llama.cpp: n_ctx per slot, model empty); re-read with the "
    "version.",
    (*SOURCE, "model"),
    unit="",
    stability=Stability.EXPERIMENTAL,
)
MODEL_INFO = _g(
    "llm_engine_model_info",
    "The checkpoint an engine serves under each model name, value 1: `root` is what /v1/models answers "
    "(vLLM: the path or repository the weights were loaded from).",
    (*SOURCE, "model", "root"),
    stability=Stability.EXPERIMENTAL,
)
SERIES_DROPPED = _g(
    "llm_engine_series_dropped",
    "Series of this engine target left out of the last scrape, by reason: series_limit "
    "(engines.max_series_per_target), label_too_long (engines.max_label_value_length), duplicate.",
    (*SOURCE, "reason"),
)

CANONICAL: tuple[MetricSpec, ...] = (
    REQUESTS_RUNNING,
    REQUESTS_WAITING,
    KV_CACHE_USAGE,
    TIME_TO_FIRST_TOKEN,
    INTER_TOKEN_LATENCY,
    REQUEST_DURATION,
    REQUEST_QUEUE_TIME,
    REQUEST_PREFILL_TIME,
    REQUEST_DECODE_TIME,
    PROMPT_TOKENS,
    GENERATION_TOKENS,
    PREFIX_CACHE_QUERIES,
    PREFIX_CACHE_HITS,
    PREEMPTIONS,
    REQUESTS_FINISHED,
    REQUEST_TIME_PER_OUTPUT_TOKEN,
)
"""Metrics re-exported from engine series (the rest of this module describes the engines themselves)."""

CAPACITY: tuple[MetricSpec, ...] = (
    KV_CACHE_CAPACITY_TOKENS,
    KV_CACHE_USED_TOKENS,
    REQUEST_PROMPT_TOKENS,
    REQUEST_GENERATION_TOKENS,
    REQUESTS_WAITING_BY_REASON,
    REQUESTS_REJECTED,
    PROMPT_TOKENS_CACHED,
    ESTIMATED_FLOPS,
    ESTIMATED_READ_BYTES,
    SPEC_DECODE_DRAFT_TOKENS,
    SPEC_DECODE_ACCEPTED_TOKENS,
    ENGINE_ASLEEP,
    LORA_ADAPTER_ACTIVE,
    LORA_MAX_ADAPTERS,
    LORA_SLOTS_USED,
)
"""Capacity metrics re-exported from engine series: the engines' own counts of KV cache, lengths, compute
and load shed. Their sources came late and are partly behind flags: they do not place a release by its names."""

MAPPED: tuple[MetricSpec, ...] = (*CANONICAL, *CAPACITY)
"""Every metric the mapping re-exports from an engine body."""

METRICS: tuple[MetricSpec, ...] = (
    *MAPPED,
    ENGINE_UP,
    ENGINE_INFO,
    METRIC_PRESENT,
    UNMAPPED_METRICS,
    SCRAPE_DURATION,
    SCRAPE_ERROR,
    SERIES_DROPPED,
    MAX_CONTEXT_TOKENS,
    MODEL_INFO,
)
