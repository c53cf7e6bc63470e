"""Optional recording rules that map vLLM's own names onto `llm_*`, for users who scrape vLLM directly.

Use them *instead of* the exporter, not with it (both would give the same series twice). Version-aware
through `or`: the newer name first, so during the releases that expose both (0.9.2-0.10.2 for the KV cache,
0.10.2-0.11.2 for inter-token latency) the new series wins. Labels follow the exporter: `model` from
`model_name`, `dp_rank` from vLLM's `engine` index, `engine="vllm"`. What this cannot give is
`llm_metric_present`: only the exporter knows which version should expose what.
"""

from __future__ import annotations

from alerts.formats import HEADER, dump_yaml
from exporter.catalogue import BY_NAME
from exporter.engines import vllm

GROUP = "llm-inference.vllm-compat"

# canonical name → vLLM names, newest first (exposed sample names; histograms without the suffix): the
# engine's own sources (`exporter/engines/vllm.py`), less the capacity metrics that need the exporter
# (derived from labels, flag-gated, or judged by release)
SOURCES: dict[str, tuple[str, ...]] = {spec.name: sources for spec, sources in vllm.SOURCES.items()}
# vLLM's label → the exporter's, and the values each takes (a model is never empty; a dp_rank may be)
_VALUES = {"model": "(.+)", "dp_rank": "(.*)"}


def relabel(expr: str) -> str:
    """vLLM's labels renamed to the exporter's (the vLLM labels stay; `engine` is overwritten last)."""
    for source, ours in vllm.LABEL_RENAMES.items():
        expr = f'label_replace({expr}, "{ours}", "$1", "{source}", "{_VALUES[ours]}")'
    return f'label_replace({expr}, "engine", "{vllm.ENGINE}", "", "")'


def rules() -> list[dict[str, str]]:
    out = []
    for canonical, sources in SOURCES.items():
        for suffix in BY_NAME[canonical].suffixes:
            expr = " or ".join(name + suffix for name in sources)
            out.append({"record": canonical + suffix, "expr": relabel(f"({expr})" if len(sources) > 1 else expr)})
    return out


def rule_file() -> str:
    return HEADER + dump_yaml({"groups": [{"name": GROUP, "rules": rules()}]})
