"""OpenCost's AI-inference cost names: `llm_*` like ours but never ours, judged by the vLLM inputs OpenCost
computes them from (pure).

OpenCost's inference cost (`pkg/inferencecost`, opencost/opencost PR #3845, merged 2026-07-03) writes per model
gauges under `llm_`, this exporter's own namespace; the names moved while it was built: `llm_total_cost` and
`llm_{,input_,output_}cost_per_million_tokens` (the PR's docs/inference-cost-tracking.md, 2026-06), then one
`llm_cost_per_million_tokens` with a `phase` label (pkg/inferencecost/exporter.go), then `llm_total_hourly_cost`
and `llm_cache_savings_fraction` beside it (exporter.go at 265c71de2a01bea6b04fc1671561528a97cd4b8d).

Its inputs are vLLM's (pkg/inferencecost/collector.go at 046782e631365e2b05a9cefff098bf0addb838ac,
`CollectMetrics`): `vllm:prompt_tokens_total` and `vllm:generation_tokens_total` (required),
`vllm:request_prefill_time_seconds_sum` and `vllm:request_time_per_output_token_seconds_sum`
(the input/output split; without them a fixed multiplier), and `vllm:prefix_cache_hits_total` read as "cache
hit blocks" for the split and multiplied by its configured KV-cache block size (`combineMetrics`:
`CachedTokens = CacheHitBlocks * BlockSize`). vLLM counts that counter in tokens ("Prefix cache hits, in terms
of number of cached tokens", vllm/v1/metrics/loggers.py:227 of 0.9.2, its first release): the cached tokens
come out block-size times too many, the effective input tokens (clamped at 0) too few. Where that count enters
a name of later versions (`llm_cache_savings_fraction`) is not read here: only the split is warned about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from exporter.promql.selectors import Matcher

PRODUCER = "OpenCost's inference cost (pkg/inferencecost, opencost/opencost PR #3845)"
NAMES = frozenset(
    {
        "llm_total_cost",
        "llm_total_hourly_cost",
        "llm_cost_per_million_tokens",
        "llm_input_cost_per_million_tokens",
        "llm_output_cost_per_million_tokens",
        "llm_cache_savings_fraction",
    }
)
TIMING = ("vllm:request_prefill_time_seconds_sum", "vllm:request_time_per_output_token_seconds_sum")
CACHE_HITS = "vllm:prefix_cache_hits_total"
COLLECTOR = "046782e631365e2b05a9cefff098bf0addb838ac"  # the collector.go read
SPLIT = frozenset({"llm_input_cost_per_million_tokens", "llm_output_cost_per_million_tokens"})
"""Names of the input/output split (and `llm_cost_per_million_tokens` with a `phase` matcher)."""


def warnings(name: str, matchers: Iterable[Matcher], exposed: frozenset[str], release: str) -> list[str]:
    """What is wrong with `name`'s value when the vLLM OpenCost reads is `release` (its default samples
    `exposed`). Its required inputs (prompt and generation tokens) are written by every vLLM release the
    tables hold, so it always has data."""
    phases = _phases(matchers) if name == "llm_cost_per_million_tokens" else set()
    split = name in SPLIT or bool(phases)
    prompt = name == "llm_input_cost_per_million_tokens" or "prompt" in phases
    found = []
    absent = [n for n in TIMING if n not in exposed]
    if split and absent:
        found.append(
            f"{release} writes no {' or '.join(absent)}: {PRODUCER} splits input and output cost by a fixed "
            "multiplier instead of the prefill and decode time"
        )
    if prompt and CACHE_HITS in exposed:
        found.append(
            f"{PRODUCER} multiplies {CACHE_HITS} by the KV-cache block size it is given (collector.go "
            f"combineMetrics at {COLLECTOR[:8]}), but {release} counts it in tokens: its cached tokens come out "
            "block-size times too many and its effective input tokens too few (clamped at 0), so the split's "
            "input cost per million tokens is too high, or 0"
        )
    return found


def _phases(matchers: Iterable[Matcher]) -> set[str]:
    """The phases (`prompt`, `generation`) a `phase` matcher selects; none for the blended series (phase "")."""
    phases = {"prompt", "generation"}
    for m in matchers:
        if m.label != "phase":
            continue
        if m.op == "=":
            phases &= {m.value}
        elif m.op == "!=":
            phases -= {m.value}
        elif m.op in ("=~", "!~"):
            try:
                hit = {p for p in phases if re.fullmatch(m.value, p)}
            except re.error:  # RE2 syntax Python does not read: it may select either
                continue
            phases = hit if m.op == "=~" else phases - hit
    return phases if any(m.label == "phase" for m in matchers) else set()
