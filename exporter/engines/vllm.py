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

from exporter.catalogue import engine as m
from exporter.catalogue.spec import MetricSpec
from exporter.engines.engine import Engine
from exporter.engines.releases import load

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

LABEL_RENAMES = {"model_name": "model", "engine": "dp_rank"}
RUST_FRONTEND = "rust_frontend"


def frontend(body: str) -> str | None:
    """RUST_FRONTEND for an OpenMetrics body (it ends in `# EOF`), None for the Python frontend's text format."""
    return RUST_FRONTEND if body.rstrip().endswith("# EOF") else None


SPEC = Engine(
    name=ENGINE,
    prefixes=(FAMILY_PREFIX,),
    sources=SOURCES,
    label_renames=LABEL_RENAMES,
    releases=load,
    version_path="/version",
    lazy_series=False,  # vLLM registers its families at start-up
    flavour=frontend,
)
