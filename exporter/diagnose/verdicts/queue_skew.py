"""Routing: one replica holds most of a model's queue while another has none (LLMLoadImbalance): round-robin
over prompts of very different length, e.g. three heavy prompts on one pod. Routing, not capacity."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, number, percent

MODEL = "namespace, model"


def queries(limits: Limits) -> dict[str, str]:
    waiting = "llm:replica_requests_waiting{$NSM}"
    return {
        "share": f"llm:replica_queue_share{{$NSM}} > {number(limits.imbalance_share)}"
        f" and on ({MODEL}) (min by ({MODEL}) ({waiting}) == 0)"
        f" and on ({MODEL}) (sum by ({MODEL}) ({waiting}) >= {number(limits.imbalance_min_waiting)})",
        "per_replica": waiting,
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    out = []
    replicas = r.samples(VERDICT.qid("per_replica"))
    for s in r.samples(VERDICT.qid("share")):
        ns, model, pod = s.label("namespace"), s.label("model"), s.label("pod")
        siblings = [x for x in replicas if x.label("namespace") == ns and x.label("model") == model]
        hot = next((x.value for x in siblings if x.label("pod") == pod), 0.0)
        total = sum(x.value for x in siblings)
        idle = sum(1 for x in siblings if x.value == 0)
        out.append(
            VERDICT.finding(
                f"{ns}/{pod} holds {percent(s.value)} of {model}'s queue ({number(hot)} of {number(total)} waiting) "
                f"while {idle} other replica(s) have none: routing, not capacity",
                [r.evidence(VERDICT.qid("share"), s.value), r.evidence(VERDICT.qid("per_replica"), hot)],
                ns,
                model,
                weight=hot,
            )
        )
    return out


VERDICT = Verdict(
    id="routing.queue_skew",
    stage="routing",
    owner="platform",
    panel="Queue per replica",
    fix="Use a request-level, load-aware router (the Gateway API inference extension, an L7 proxy with "
    "least-request balancing) instead of round-robin over prompts of unequal length; prefix-aware routing for "
    "shared prompts.",
    queries=queries,
    judge=judge,
    condition="share",
)
