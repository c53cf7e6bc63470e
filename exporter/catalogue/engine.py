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

ENGINE_UP = _g("llm_engine_up", "1 when the last scrape of this engine target succeeded, else 0.", SOURCE)
ENGINE_INFO = _g(
    "llm_engine_info",
    "Engine version, value 1. version_source is 'endpoint' (from /version), 'inferred' (from the metric "
    "names) or 'unknown'.",
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
    "parse, metrics_disabled: the engine serves no metrics, e.g. llama.cpp without --metrics), else absent.",
    (*SOURCE, "reason"),
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

METRICS: tuple[MetricSpec, ...] = (
    *CANONICAL,
    ENGINE_UP,
    ENGINE_INFO,
    METRIC_PRESENT,
    UNMAPPED_METRICS,
    SCRAPE_DURATION,
    SCRAPE_ERROR,
    SERIES_DROPPED,
)
