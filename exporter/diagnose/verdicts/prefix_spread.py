"""Routing: the prefix-cache hit ratios of one model's replicas far apart: routing does not keep requests that
share a prefix (a system prompt, a conversation) on the replica that has it cached, so some prefill again."""

from __future__ import annotations

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Sample, number, per_sample, percent

MODEL = "namespace, model"


def queries(limits: Limits) -> dict[str, str]:
    ratio = "llm:replica_prefix_cache_hit_ratio{$NSM}"
    return {
        "spread": f"max by ({MODEL}) ({ratio}) - min by ({MODEL}) ({ratio}) > {number(limits.prefix_hit_spread)}",
    }


def says(s: Sample) -> str:
    return (
        f"the prefix-cache hit ratios of {s.label('namespace')}/{s.label('model')}'s replicas are "
        f"{percent(s.value)} apart: requests sharing a prefix do not reach the replica that has it cached"
    )


VERDICT = per_sample(
    "spread",
    says,
    id="routing.prefix_spread",
    stage="routing",
    owner="platform",
    panel="Prefix cache hit ratio per replica",
    fix="Prefix-aware routing (the inference gateway's prefix-cache scorer, session affinity on the conversation) "
    "so that shared prompts hit the cache they warmed.",
    queries=queries,
    scope=("namespace", "model"),
    weight=lambda s: s.value,
)
