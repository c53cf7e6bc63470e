"""Waiting: is anyone waiting? The gate of the walk, and the verdict for a wait no stage explains.

Someone waits for a model when, over the window, its first-token p99 is above the objective, its queue went
above the queue threshold, its inter-token p99 is above its threshold, or its answers run into a route's
timeout (they are cut) or through a buffering route (users wait for the whole answer). Nobody waiting ends
the walk with a clean bill.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Sample, Verdict, explained, number, percent, seconds
from exporter.diagnose.verdicts import cluster_view, route_buffering, route_timeout

BY = "namespace, model"


def _p99(histogram: str) -> str:
    return f"histogram_quantile(0.99, sum by ({BY}, le) (rate({histogram}_bucket{{$NSM}}[$W])))"


def queries(limits: Limits) -> dict[str, str]:
    return {
        "ttft_p99": _p99("llm_time_to_first_token_seconds"),
        "itl_p99": _p99("llm_inter_token_latency_seconds"),
        "queue_max": f"max_over_time(sum by ({BY}) (llm_requests_waiting{{$NSM}})[$W:])",
        # the share of first-token time spent queueing: the queue's part against prefill's
        "queue_share": f"sum by ({BY}) (rate(llm_request_queue_time_seconds_sum{{$NSM}}[$W]))"
        f" / (sum by ({BY}) (rate(llm_time_to_first_token_seconds_sum{{$NSM}}[$W])) > 0)",
        "models": f"group by ({BY}) (last_over_time(llm_requests_running{{$NSM}}[$W]))",
    }


@dataclass(frozen=True)
class Wait:
    """What one model's users wait, and whether that is too long."""

    namespace: str
    model: str
    ttft_p99: float | None
    itl_p99: float | None
    queue_max: float | None
    queue_share: float | None
    reasons: tuple[str, ...]

    @property
    def queueing(self) -> bool:
        """Someone waits and it is the queue: most of first-token time is queueing, or, without a queue-time
        histogram (llama.cpp, TGI), the queue went over the limit."""
        if not self.reasons:
            return False
        return self.queue_share >= 0.5 if self.queue_share is not None else "queue" in self.reasons

    def summary(self) -> str:
        parts = []
        if self.ttft_p99 is not None:
            parts.append(f"first token {seconds(self.ttft_p99)} (p99)")
        if self.queue_max is not None:
            parts.append(f"up to {number(self.queue_max)} waiting")
        if self.queue_share is not None:
            parts.append(f"{percent(self.queue_share)} of first-token time queueing")
        if self.itl_p99 is not None:
            parts.append(f"{seconds(self.itl_p99)} between tokens (p99)")
        return f"{self.namespace}/{self.model}: " + ", ".join(parts)


def _by_model(samples: Sequence[Sample]) -> dict[tuple[str, str], float]:
    return {(s.label("namespace"), s.label("model")): s.value for s in samples if s.value == s.value}


def who_waits(r: Readings) -> list[Wait]:
    """Every model of the scope with its wait; `reasons` empty when nobody waits too long for it."""
    q = VERDICT.qid
    ttft, itl = _by_model(r.samples(q("ttft_p99"))), _by_model(r.samples(q("itl_p99")))
    queue, share = _by_model(r.samples(q("queue_max"))), _by_model(r.samples(q("queue_share")))
    cut = _by_model(r.samples(route_timeout.VERDICT.qid("cut")))
    buffered = {s.label("namespace") for s in r.samples(route_buffering.VERDICT.qid("on"))}
    out = []
    for key in sorted(_by_model(r.samples(q("models")))):
        reasons = []
        if ttft.get(key, 0) > r.limits.ttft_p99_seconds:
            reasons.append("first token")
        if queue.get(key, 0) > r.limits.queue_waiting:
            reasons.append("queue")
        if itl.get(key, 0) > r.limits.itl_p99_seconds:
            reasons.append("inter-token")
        if key in cut:
            reasons.append("answers cut")
        if key[0] in buffered:
            reasons.append("answers buffered")
        out.append(Wait(*key, ttft.get(key), itl.get(key), queue.get(key), share.get(key), tuple(reasons)))
    return out


CAUSES = ("routing", "scaling", "placement", "engine", "ingress")


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    blind = ""
    if r.samples(cluster_view.VERDICT.qid("absent")):
        blind = (
            "; no cluster role reports autoscalers, pending pods or routes, so scaling and placement were not judged"
        )
    out = []
    for wait in who_waits(r):
        if not wait.reasons or explained(earlier, wait.namespace, wait.model, CAUSES):
            continue
        queueing = wait.queueing
        evidence = [
            r.evidence(VERDICT.qid(name), value)
            for name, value in (("ttft_p99", wait.ttft_p99), ("queue_max", wait.queue_max), ("itl_p99", wait.itl_p99))
            if value is not None
        ]
        out.append(
            VERDICT.finding(
                f"users of {wait.namespace}/{wait.model} wait ({', '.join(wait.reasons)}) and no stage explains it: "
                + wait.summary().split(": ", 1)[1]
                + blind,
                evidence,
                wait.namespace,
                wait.model,
                weight=wait.ttft_p99 or 0,
                owner="platform" if queueing else "application",
                fix=FIX_QUEUE if queueing else FIX_PREFILL,
            )
        )
    return out


FIX_QUEUE = (
    "Requests queue: add replicas (or let the autoscaler do it, on the queue depth llm_requests_waiting), and "
    "check the KV cache and --max-num-seqs of the engines."
)
FIX_PREFILL = (
    "Queue time is small, so prefill is slow: longer prompts (cap the context, enable prefix caching or chunked "
    "prefill), or preemptions recomputing prefills."
)

VERDICT = Verdict(
    id="waiting.unexplained",
    stage="waiting",
    owner="platform",
    panel="Time to first token",
    fix=FIX_QUEUE,
    queries=queries,
    judge=judge,
)
