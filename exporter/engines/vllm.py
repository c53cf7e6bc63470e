"""vLLM → canonical `llm_*` metrics: which vLLM families carry each canonical metric.

Each canonical metric lists the vLLM families that carry *the same quantity*, newest name first. Which of
them a given release exposes comes from the per-release table (`releases.py`), so the mapping follows
vLLM's renames release by release:
- `gpu_cache_usage_perc` → `kv_cache_usage_perc` (0.9.2; both 0–1 despite "perc");
- `time_per_output_token_seconds` → `inter_token_latency_seconds` (0.10.2). Not to
  `request_time_per_output_token_seconds`: that is a per-request mean, a different quantity;
- `gpu_prefix_cache_{queries,hits}` → `prefix_cache_{queries,hits}` (0.9.2);
- labels: `model_name` → `model`, `engine` (data-parallel index, 0.8.3+) → `dp_rank`.
V0's `gpu_prefix_cache_hit_rate` gauge (≤0.7.3) is a ratio, not a counter, so it maps to nothing.
The Rust frontend (`VLLM_USE_RUST_FRONTEND=1`, 0.33.0 on) is the same release with another set of families
(no `admission_rejections_total`, `mm_cache_*`, `kv_offload_*`, …): it always answers OpenMetrics 1.0 (`# TYPE`
lines with the base name, ending in `# EOF`), whatever the scrape asks; the exporter asks for the text format,
which the Python frontend serves, so a vLLM body ending in `# EOF` is the Rust frontend, and its own release
table applies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from exporter.catalogue import engine as m
from exporter.catalogue.spec import MetricSpec
from exporter.engines.engine import Engine, Labels

ENGINE = "vllm"
FAMILY_PREFIX = "vllm:"

SOURCES: dict[MetricSpec, tuple[str, ...]] = {
    m.REQUESTS_RUNNING: ("vllm:num_requests_running",),
    m.REQUESTS_WAITING: ("vllm:num_requests_waiting",),
    m.KV_CACHE_USAGE: ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    m.TIME_TO_FIRST_TOKEN: ("vllm:time_to_first_token_seconds",),
    m.INTER_TOKEN_LATENCY: ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    m.REQUEST_DURATION: ("vllm:e2e_request_latency_seconds",),
    m.REQUEST_QUEUE_TIME: ("vllm:request_queue_time_seconds",),
    m.REQUEST_PREFILL_TIME: ("vllm:request_prefill_time_seconds",),
    m.REQUEST_DECODE_TIME: ("vllm:request_decode_time_seconds",),
    m.PROMPT_TOKENS: ("vllm:prompt_tokens_total",),
    m.GENERATION_TOKENS: ("vllm:generation_tokens_total",),
    m.PREFIX_CACHE_QUERIES: ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    m.PREFIX_CACHE_HITS: ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    m.PREEMPTIONS: ("vllm:num_preemptions_total",),
    m.REQUESTS_FINISHED: ("vllm:request_success_total",),
}
# the capacity metrics (m.CAPACITY): mapped like the others, but they do not place a release by its names
CAPACITY_SOURCES: dict[MetricSpec, tuple[str, ...]] = {
    m.KV_CACHE_CAPACITY_TOKENS: ("vllm:cache_config_info",),
    m.REQUEST_PROMPT_TOKENS: ("vllm:request_prompt_tokens",),
    m.REQUEST_GENERATION_TOKENS: ("vllm:request_generation_tokens",),
    m.REQUESTS_WAITING_BY_REASON: ("vllm:num_requests_waiting_by_reason",),
    m.REQUESTS_REJECTED: ("vllm:admission_rejections_total",),
    m.PROMPT_TOKENS_CACHED: ("vllm:prompt_tokens_cached_total",),
    m.ESTIMATED_FLOPS: ("vllm:estimated_flops_per_gpu_total",),
    m.ESTIMATED_READ_BYTES: ("vllm:estimated_read_bytes_per_gpu_total",),
    m.SPEC_DECODE_DRAFT_TOKENS: ("vllm:spec_decode_num_draft_tokens_total",),
    m.SPEC_DECODE_ACCEPTED_TOKENS: ("vllm:spec_decode_num_accepted_tokens_total",),
    m.ENGINE_ASLEEP: ("vllm:engine_sleep_state",),
    m.LORA_ADAPTER_ACTIVE: ("vllm:lora_requests_info",),
    m.LORA_MAX_ADAPTERS: ("vllm:lora_requests_info",),
}

MFU_FLAG = "--enable-mfu-metrics"
FLAGS = {
    m.ESTIMATED_FLOPS: MFU_FLAG,
    m.ESTIMATED_READ_BYTES: MFU_FLAG,
    m.SPEC_DECODE_DRAFT_TOKENS: "--speculative-config",
    m.SPEC_DECODE_ACCEPTED_TOKENS: "--speculative-config",
    m.LORA_ADAPTER_ACTIVE: "--enable-lora",
    m.LORA_MAX_ADAPTERS: "--enable-lora",
}
# a hybrid model's blocks hold different numbers of tokens per KV-cache group: only the group-aware count
# (kv_cache_size_tokens) is its capacity
_HYBRID = ("mamba_block_size",)


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() else None


def kv_capacity_tokens(samples: Sequence[tuple[Labels, float]]) -> list[tuple[Labels, float]]:
    """The KV cache's capacity in tokens, from `cache_config_info`'s labels: `kv_cache_size_tokens`, the
    group-aware count vLLM logs at start-up ("KV cache size: N tokens"), else `num_gpu_blocks` x `block_size`
    (older releases; not for a hybrid model, whose groups hold blocks of different sizes)."""
    out = []
    for labels, _ in samples:
        info = dict(labels)
        tokens = _number(info.get("kv_cache_size_tokens"))
        blocks, size = _number(info.get("num_gpu_blocks")), _number(info.get("block_size"))
        hybrid = any(info.get(key) not in (None, "None") for key in _HYBRID)
        if tokens is None and blocks is not None and size is not None and not hybrid:
            tokens = blocks * size
        if tokens is not None:
            out.append((tuple((k, v) for k, v in labels if k in LABEL_RENAMES), float(tokens)))
    return out


def asleep(samples: Sequence[tuple[Labels, float]]) -> list[tuple[Labels, float]]:
    """1 where `engine_sleep_state{sleep_state="awake"}` is 0 (either sleep level), 0 where it is 1."""
    return [
        (tuple((k, v) for k, v in labels if k != "sleep_state"), 0.0 if value else 1.0)
        for labels, value in samples
        if ("sleep_state", "awake") in labels
    ]


def _adapters(labels: Labels) -> set[str]:
    info = dict(labels)
    names = (info.get("running_lora_adapters", ""), info.get("waiting_lora_adapters", ""))
    return {a for text in names for a in text.split(",") if a}


def lora_adapters_active(samples: Sequence[tuple[Labels, float]]) -> list[tuple[Labels, float]]:
    """`lora_requests_info` keeps one series per label combination it ever set, each valued the Unix time it was
    last set: the newest names the adapters with requests in flight now (1), the older ones those that had
    some (0). Bounded: the first `LORA_TOP_ADAPTERS` (active, then most recent, then by name), the rest as
    `other`."""
    if not samples:
        return []
    newest = max(samples, key=lambda s: s[1])
    active = _adapters(newest[0])
    last_seen: dict[str, float] = {}
    for labels, when in samples:
        for adapter in _adapters(labels):
            last_seen[adapter] = max(when, last_seen.get(adapter, when))
    order = sorted(last_seen, key=lambda a: (a not in active, -last_seen[a], a))
    out: dict[str, float] = {}
    for i, adapter in enumerate(order):
        key = adapter if i < m.LORA_TOP_ADAPTERS else "other"
        out[key] = max(out.get(key, 0.0), 1.0 if adapter in active else 0.0)
    return [((("adapter", adapter),), value) for adapter, value in out.items()]


def lora_max_adapters(samples: Sequence[tuple[Labels, float]]) -> list[tuple[Labels, float]]:
    """`max_lora` of the newest `lora_requests_info` series (vLLM's --max-loras)."""
    if not samples:
        return []
    slots = _number(dict(max(samples, key=lambda s: s[1])[0]).get("max_lora"))
    return [((), float(slots))] if slots is not None else []


LABEL_RENAMES = {"model_name": "model", "engine": "dp_rank"}
CONTEXT_ARGS = ("--max-model-len", "--max_model_len")


def _spellings(flag: str) -> tuple[str, ...]:
    """vLLM's argument parser (FlexibleArgumentParser) reads `_` in a flag's name as `-`: both spellings."""
    return (flag, "--" + flag[2:].replace("-", "_")) if "-" in flag[2:] else (flag,)


# the arguments llm_model_info reads (vllm/engine/arg_utils.py EngineArgs.add_cli_args; `vllm serve <model>`,
# or `--model` for the api_server module). Not given, the served model name is the model (its help: "If not
# specified, the model name will be the same as the `--model` argument")
MODEL_ARGS = {
    "model": ("--model",),
    "served_model_name": _spellings("--served-model-name"),
    "revision": ("--revision",),
    "quantization": ("--quantization", "-q"),
    "dtype": ("--dtype",),
    "max_model_len": CONTEXT_ARGS,
}
RUST_FRONTEND = "rust_frontend"


def frontend(body: str) -> str | None:
    """RUST_FRONTEND for an OpenMetrics body (it ends in `# EOF`), None for the Python frontend's text format."""
    return RUST_FRONTEND if body.rstrip().endswith("# EOF") else None


SPEC = Engine(
    name=ENGINE,
    display_name="vLLM",
    prefixes=(FAMILY_PREFIX,),
    sources={**SOURCES, **CAPACITY_SOURCES},
    label_renames=LABEL_RENAMES,
    version_path="/version",
    lazy_series=False,  # vLLM registers its families at start-up
    flavour=frontend,
    flags=FLAGS,
    counted_with_flag=frozenset(FLAGS),  # the Rust frontend registers them all at start-up
    derived={
        m.KV_CACHE_CAPACITY_TOKENS: kv_capacity_tokens,
        m.ENGINE_ASLEEP: asleep,
        m.LORA_ADAPTER_ACTIVE: lora_adapters_active,
        m.LORA_MAX_ADAPTERS: lora_max_adapters,
    },
    models_path="/v1/models",
    image_words=("vllm",),
    command=re.compile(r"\bvllm\s+serve\b|\bvllm\.entrypoints\b"),
    context_args=CONTEXT_ARGS,
    context_env=("VLLM_MAX_MODEL_LEN",),
    model_args=MODEL_ARGS,
    model_positional=re.compile(r"\bvllm\s+serve\s+([^-\s]\S*)"),
    served_name_is_model=True,
)
