"""Optional recording rules that map vLLM's own names onto `llm_*`, for users who scrape vLLM directly.

Use them *instead of* the exporter, not with it (both would give the same series twice). Version-aware
through `or`: the newer name first, so during the releases that expose both (0.9.2-0.10.2 for the KV cache,
0.10.2-0.11.2 for inter-token latency) the new series wins. Labels follow the exporter: `model` from
`model_name`, `dp_rank` from vLLM's `engine` index, `engine="vllm"`. What this cannot give is
`llm_metric_present`: only the exporter knows which version should expose what.
"""

from __future__ import annotations

from alerts.formats import HEADER, dump_yaml
from exporter.catalogue import BY_NAME, MetricType

GROUP = "llm-inference.vllm-compat"

# canonical name → vLLM names, newest first (exposed sample names; histograms without the suffix)
SOURCES: dict[str, tuple[str, ...]] = {
    "llm_requests_running": ("vllm:num_requests_running",),
    "llm_requests_waiting": ("vllm:num_requests_waiting",),
    "llm_kv_cache_usage_ratio": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    "llm_time_to_first_token_seconds": ("vllm:time_to_first_token_seconds",),
    "llm_inter_token_latency_seconds": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    "llm_request_duration_seconds": ("vllm:e2e_request_latency_seconds",),
    "llm_request_queue_time_seconds": ("vllm:request_queue_time_seconds",),
    "llm_request_prefill_time_seconds": ("vllm:request_prefill_time_seconds",),
    "llm_request_decode_time_seconds": ("vllm:request_decode_time_seconds",),
    "llm_prompt_tokens_total": ("vllm:prompt_tokens_total",),
    "llm_generation_tokens_total": ("vllm:generation_tokens_total",),
    "llm_prefix_cache_queries_total": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "llm_prefix_cache_hits_total": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "llm_preemptions_total": ("vllm:num_preemptions_total",),
    "llm_requests_finished_total": ("vllm:request_success_total",),
}


def relabel(expr: str) -> str:
    """vLLM's labels renamed to the exporter's (the vLLM labels stay; `engine` is overwritten last)."""
    expr = f'label_replace({expr}, "model", "$1", "model_name", "(.+)")'
    expr = f'label_replace({expr}, "dp_rank", "$1", "engine", "(.*)")'
    return f'label_replace({expr}, "engine", "vllm", "", "")'


def rules() -> list[dict[str, str]]:
    out = []
    for canonical, sources in SOURCES.items():
        spec = BY_NAME[canonical]
        suffixes = ("_bucket", "_sum", "_count") if spec.type is MetricType.HISTOGRAM else ("",)
        for suffix in suffixes:
            expr = " or ".join(name + suffix for name in sources)
            out.append({"record": canonical + suffix, "expr": relabel(f"({expr})" if len(sources) > 1 else expr)})
    return out


def rule_file() -> str:
    return HEADER + dump_yaml({"groups": [{"name": GROUP, "rules": rules()}]})
