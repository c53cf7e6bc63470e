"""SGLang → canonical `llm_*` metrics (`sglang:` prefix, `--enable-metrics`; version at `/get_server_info`).

Renames followed: `queue_time_s` (0.5.2 only) → `queue_time_seconds` (0.5.3+). Left absent on purpose:
- KV-cache usage: `sglang:token_usage` is token-pool usage (later the max over pools), not exactly KV usage;
- inter-token latency before 0.4.3.post3: `time_per_output_token_seconds` is a per-request mean, not a
  per-token histogram (only `inter_token_latency_seconds` maps);
- prefix-cache queries: SGLang has hits (`cached_tokens_total`) but no queries counter;
- finished requests: `num_requests_total` counts every request, finished or not, with no reason.
`request_time_per_output_token_seconds` (0.5.22+, per-request mean TPOT) feeds the experimental
`llm_request_time_per_output_token_seconds`.
KV capacity and use in tokens: `max_total_num_tokens` (0.5.6+; the full-attention pool: SWA models size a
second pool, `max_total_num_tokens_swa`) and `kv_used_tokens` (0.5.11+). `estimated_flops_per_gpu_total`
(0.5.10+) is absent while it has counted nothing. LoRA (`--enable-lora`): `lora_pool_slots_total`
(max_loras_per_batch) and `lora_pool_slots_used` (slots occupied in GPU memory).
Series appear after the first batch/request (prometheus_client children are created on first `.labels()`).
"""

from __future__ import annotations

import re

from exporter.catalogue import engine as m
from exporter.engines.engine import Engine

SOURCES = {
    m.REQUESTS_RUNNING: ("sglang:num_running_reqs",),
    m.REQUESTS_WAITING: ("sglang:num_queue_reqs",),
    m.TIME_TO_FIRST_TOKEN: ("sglang:time_to_first_token_seconds",),
    m.INTER_TOKEN_LATENCY: ("sglang:inter_token_latency_seconds",),
    m.REQUEST_DURATION: ("sglang:e2e_request_latency_seconds",),
    m.REQUEST_QUEUE_TIME: ("sglang:queue_time_seconds", "sglang:queue_time_s"),
    m.PROMPT_TOKENS: ("sglang:prompt_tokens_total",),
    m.GENERATION_TOKENS: ("sglang:generation_tokens_total",),
    m.PREFIX_CACHE_HITS: ("sglang:cached_tokens_total",),
    m.PREEMPTIONS: ("sglang:num_retracted_requests_total",),
    m.REQUEST_TIME_PER_OUTPUT_TOKEN: ("sglang:request_time_per_output_token_seconds",),
    m.KV_CACHE_CAPACITY_TOKENS: ("sglang:max_total_num_tokens",),
    m.KV_CACHE_USED_TOKENS: ("sglang:kv_used_tokens",),
    m.REQUEST_PROMPT_TOKENS: ("sglang:prompt_tokens_histogram",),
    m.REQUEST_GENERATION_TOKENS: ("sglang:generation_tokens_histogram",),
    m.ESTIMATED_FLOPS: ("sglang:estimated_flops_per_gpu_total",),
    m.LORA_MAX_ADAPTERS: ("sglang:lora_pool_slots_total",),
    m.LORA_SLOTS_USED: ("sglang:lora_pool_slots_used",),
}

TOKENS_HISTOGRAM = "--collect-tokens-histogram"

SPEC = Engine(
    name="sglang",
    display_name="SGLang",
    prefixes=("sglang:",),
    sources=SOURCES,
    label_renames={"model_name": "model", "dp_rank": "dp_rank"},
    release_source="sglang",
    version_path="/get_server_info",
    activity=("sglang:num_requests_total", "sglang:prompt_tokens_total"),
    notes={
        m.KV_CACHE_USAGE: "token_usage is token-pool usage, not exactly KV-cache usage",
        m.INTER_TOKEN_LATENCY: "before 0.4.3.post3 only time_per_output_token_seconds, a per-request mean",
        m.PREFIX_CACHE_QUERIES: "no queries counter (hits only)",
        m.REQUESTS_FINISHED: "num_requests_total counts all requests, without a finished reason",
        m.ESTIMATED_READ_BYTES: "no bytes-read counter",
        m.SPEC_DECODE_DRAFT_TOKENS: "spec_num_draft_tokens is a gauge of the configured draft length",
        m.SPEC_DECODE_ACCEPTED_TOKENS: "spec_accept_length/rate are gauges of means, not a token counter",
        m.LORA_ADAPTER_ACTIVE: "no per-adapter series: lora_pool_slots_used counts the adapters loaded, not in use",
    },
    # the token histograms need --collect-tokens-histogram in the releases that gate them
    flags={
        m.REQUEST_PROMPT_TOKENS: TOKENS_HISTOGRAM,
        m.REQUEST_GENERATION_TOKENS: TOKENS_HISTOGRAM,
        m.LORA_MAX_ADAPTERS: "--enable-lora",
        m.LORA_SLOTS_USED: "--enable-lora",
    },
    counted_with_flag=frozenset({m.ESTIMATED_FLOPS}),  # a zero count is no estimate: absent
    # `priority` only with priority scheduling (0.5.10 on), `dp_rank` only with DP attention
    label_flags={
        "priority": "priority scheduling (--enable-priority-scheduling)",
        "dp_rank": "DP attention (--enable-dp-attention)",
    },
    image_words=("sglang",),
    command=re.compile(r"\bsglang\.launch_server\b|\bsglang\s+serve\b"),
    context_args=("--context-length",),
    # python/sglang/srt/server_args.py ServerArgs.add_cli_args (`--model` is an alias of `--model-path`); not
    # given, the served model name is the model path (ServerArgs.__post_init__)
    model_args={
        "model": ("--model-path", "--model"),
        "served_model_name": ("--served-model-name",),
        "revision": ("--revision",),
        "quantization": ("--quantization",),
        "dtype": ("--dtype",),
        "max_model_len": ("--context-length",),
    },
    served_name_is_model=True,
)
