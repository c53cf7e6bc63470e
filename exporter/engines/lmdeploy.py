"""LMDeploy → canonical `llm_*` metrics (`lmdeploy:` prefix). LMDeploy has no version endpoint: its release
is inferred from the names present (`num_requests_finished` ≤0.12.0, `num_requests_completed` 0.12.1–0.12.2,
`num_requests_succeeded`/`failed` ≥0.12.3, `cached_tokens_total` ≥0.14.0), and `version_source` says so.

Left absent on purpose: inter-token latency. `time_per_output_token_seconds` observes, per engine output, the
time since the previous output divided by its new tokens: close to, but not, the per-token gap.
Labelled series are created on first use.
"""

from __future__ import annotations

import re

from exporter.catalogue import engine as m
from exporter.engines.engine import Engine

SOURCES = {
    m.REQUESTS_RUNNING: ("lmdeploy:num_requests_running",),
    m.REQUESTS_WAITING: ("lmdeploy:num_requests_waiting",),
    m.KV_CACHE_USAGE: ("lmdeploy:gpu_cache_usage_perc",),
    m.TIME_TO_FIRST_TOKEN: ("lmdeploy:time_to_first_token_seconds",),
    m.REQUEST_DURATION: ("lmdeploy:e2e_request_latency_seconds",),
    m.REQUEST_QUEUE_TIME: ("lmdeploy:request_queue_time_seconds",),
    m.REQUEST_PREFILL_TIME: ("lmdeploy:request_prefill_time_seconds",),
    m.REQUEST_DECODE_TIME: ("lmdeploy:request_decode_time_seconds",),
    m.PROMPT_TOKENS: ("lmdeploy:prompt_tokens_total",),
    m.GENERATION_TOKENS: ("lmdeploy:generation_tokens_total",),
    m.PREFIX_CACHE_HITS: ("lmdeploy:cached_tokens_total",),
    m.REQUESTS_FINISHED: ("lmdeploy:request_success_total",),
    m.REQUEST_PROMPT_TOKENS: ("lmdeploy:request_prompt_tokens",),
    m.REQUEST_GENERATION_TOKENS: ("lmdeploy:request_generation_tokens",),
}

SPEC = Engine(
    name="lmdeploy",
    display_name="LMDeploy",
    prefixes=("lmdeploy:",),
    sources=SOURCES,
    label_renames={"model_name": "model", "engine": "dp_rank"},
    release_source="lmdeploy",
    version_path=None,
    activity=("lmdeploy:prompt_tokens_total", "lmdeploy:request_success_total"),
    notes={m.INTER_TOKEN_LATENCY: "time_per_output_token_seconds averages each engine output over its tokens"},
    image_words=("lmdeploy",),
    command=re.compile(r"\blmdeploy\s+serve\b"),
    context_args=("--session-len",),
)
