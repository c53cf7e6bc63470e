"""trtllm-serve → canonical `llm_*` metrics. Prometheus text is at `/prometheus/metrics` (its `/metrics` is JSON
iteration stats); version at `/version`.

The release table is written here, not derived: TensorRT-LLM's repository and wheels are too large to read,
so the boundaries are *inferred* from the PRs that changed `tensorrt_llm/metrics/collector.py`, placed on the
releases PyPI lists for `tensorrt-llm`:
- 1.1.0 (PR #5785, Aug 2025): five unprefixed families; 1.2.0 and 1.2.1 (the newest final release) still
  those five: the 1.2 line was released before the prefix landed;
- PRs #11243, #12545, #12636, #12413 (Feb–Apr 2026, merged during the 1.3.0 release candidates): every name
  gains the `trtllm_` prefix, plus KV-cache, request-count, token and phase-time families. 1.3.0 was never
  released final (only 1.3.0rc0..rc29); the first pre-releases after every one of those PRs are 1.4.0rc0 and
  1.4.0rc1, in the table as pre-releases (`PRE_RELEASES`): `check --against` takes them only when named.
Left absent on purpose: inter-token latency (`time_per_output_token_seconds` is TPOT, a per-request mean: it
feeds the experimental `llm_request_time_per_output_token_seconds` instead).
Series are created on first use (and need `return_perf_metrics: true`).
"""

from __future__ import annotations

import re
from functools import cache

from exporter.catalogue import engine as m
from exporter.engines.engine import Engine
from exporter.engines.releases import Release, Releases

G1 = (
    "request_success_total",
    "e2e_request_latency_seconds",
    "time_to_first_token_seconds",
    "time_per_output_token_seconds",
    "request_queue_time_seconds",
)
G3 = (
    *(f"trtllm_{name}" for name in G1),
    "trtllm_kv_cache_hit_rate",
    "trtllm_kv_cache_utilization",
    "trtllm_num_requests_running",
    "trtllm_num_requests_waiting",
    "trtllm_prompt_tokens_total",
    "trtllm_generation_tokens_total",
    "trtllm_request_prefill_time_seconds",
    "trtllm_request_decode_time_seconds",
    "trtllm_request_inference_time_seconds",
    "trtllm_prompt_cached_tokens_total",
)


PRE_RELEASES = frozenset({"1.4.0rc0", "1.4.0rc1"})
NEVER_FINAL = {"1.3.0": "only release candidates 1.3.0rc0..1.3.0rc29 were published"}
"""Versions that never had a final release, and why `check --against` refuses them."""


@cache
def releases() -> Releases:
    table = (
        *(
            Release(v, (1, *minor), frozenset(G1))
            for v, minor in (("1.1.0", (1, 0)), ("1.2.0", (2, 0)), ("1.2.1", (2, 1)))
        ),
        # a pre-release sorts after the finals it follows; its key is its numbers (1.4.0rc1 is 1.4.0's line)
        *(Release(v, (1, 4, 0), frozenset(G3)) for v in sorted(PRE_RELEASES)),
    )
    return Releases(table, frozenset(G1) | frozenset(G3))


SOURCES = {
    m.REQUESTS_RUNNING: ("trtllm_num_requests_running",),
    m.REQUESTS_WAITING: ("trtllm_num_requests_waiting",),
    m.KV_CACHE_USAGE: ("trtllm_kv_cache_utilization",),
    m.TIME_TO_FIRST_TOKEN: ("trtllm_time_to_first_token_seconds", "time_to_first_token_seconds"),
    m.REQUEST_DURATION: ("trtllm_e2e_request_latency_seconds", "e2e_request_latency_seconds"),
    m.REQUEST_QUEUE_TIME: ("trtllm_request_queue_time_seconds", "request_queue_time_seconds"),
    m.REQUEST_PREFILL_TIME: ("trtllm_request_prefill_time_seconds",),
    m.REQUEST_DECODE_TIME: ("trtllm_request_decode_time_seconds",),
    m.PROMPT_TOKENS: ("trtllm_prompt_tokens_total",),
    m.GENERATION_TOKENS: ("trtllm_generation_tokens_total",),
    m.PREFIX_CACHE_HITS: ("trtllm_prompt_cached_tokens_total",),
    m.REQUESTS_FINISHED: ("trtllm_request_success_total", "request_success_total"),
    m.REQUEST_TIME_PER_OUTPUT_TOKEN: ("trtllm_time_per_output_token_seconds", "time_per_output_token_seconds"),
}

SPEC = Engine(
    name="trtllm",
    display_name="TensorRT-LLM",
    prefixes=("trtllm_",),
    sources=SOURCES,
    label_renames={"model_name": "model"},
    written_releases=releases,
    version_path="/version",
    metrics_path="/prometheus/metrics",
    json_at_metrics=True,  # its /metrics is JSON iteration stats
    activity=("trtllm_request_success_total", "request_success_total"),
    notes={m.INTER_TOKEN_LATENCY: "time_per_output_token_seconds is TPOT, a per-request mean (see TPOT metric)"},
    image_words=("tensorrt llm", "trtllm"),
    command=re.compile(r"\btrtllm-serve\b"),
    context_args=("--max_seq_len", "--max-seq-len"),
)
