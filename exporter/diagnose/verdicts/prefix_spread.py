"""Routing: the prefix-cache hit ratios of one model's replicas far apart: routing does not keep requests that
share a prefix (a system prompt, a conversation) on the replica that has it cached, so some prefill again."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, number, percent

MODEL = "namespace, model"


def queries(limits: Limits) -> dict[str, str]:
    ratio = "llm:replica_prefix_cache_hit_ratio{$NSM}"
    return {
        "spread": f"max by ({MODEL}) ({ratio}) - min by ({MODEL}) ({ratio}) > {number(limits.prefix_hit_spread)}",
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    return [
        VERDICT.finding(
            f"the prefix-cache hit ratios of {s.label('namespace')}/{s.label('model')}'s replicas are "
            f"{percent(s.value)} apart: requests sharing a prefix do not reach the replica that has it cached",
            [r.evidence(VERDICT.qid("spread"), s.value)],
            s.label("namespace"),
            s.label("model"),
            weight=s.value,
        )
        for s in r.samples(VERDICT.qid("spread"))
    ]


VERDICT = Verdict(
    id="routing.prefix_spread",
    stage="routing",
    owner="platform",
    panel="Prefix cache hit ratio per replica",
    fix="Prefix-aware routing (the inference gateway's prefix-cache scorer, session affinity on the conversation) "
    "so that shared prompts hit the cache they warmed.",
    queries=queries,
    judge=judge,
    condition="spread",
)
