"""Engine: compute binds (requests wait although KV cache and bandwidth have room: prefill is saturated).

It is the class of any queue the KV cache and bandwidth do not explain, so it is not reported where routing,
scaling or placement already explain the queue (capacity idles next to the hot replica, or is not there), and
the dashboard's Diagnosis row does not record it: the Bottleneck timeline shows the class itself."""

from __future__ import annotations

from exporter.diagnose.model import Readings, Verdict, seconds
from exporter.diagnose.verdicts.bottleneck import judge_for, p99, queries_for, value


def _describe(r: Readings, ns: str, model: str) -> tuple[str, str, str, list[str]]:
    prefill = value(r, VERDICT.qid("prefill_p99"), ns, model)
    decode = value(r, VERDICT.qid("decode_p99"), ns, model)
    detail = ""
    if prefill is not None and decode is not None:
        detail = f" (prefill {seconds(prefill)}, decode {seconds(decode)}, p99)"
    consequence = "requests wait although KV cache and bandwidth have room"
    return "compute", detail, consequence, ["prefill_p99", "decode_p99"]


VERDICT: Verdict = Verdict(
    id="engine.compute",
    stage="engine",
    owner="application",
    panel="Bottleneck",
    fix="Prefill is saturated: cap the prompt (a RAG context, a system prompt), enable prefix caching and chunked "
    "prefill so that long prompts stop blocking the others; or add replicas.",
    queries=queries_for(
        "compute",
        {
            "prefill_p99": p99("llm_request_prefill_time_seconds"),
            "decode_p99": p99("llm_request_decode_time_seconds"),
        },
    ),
    judge=judge_for(lambda: VERDICT, _describe, unless=("routing", "scaling", "placement")),
)
