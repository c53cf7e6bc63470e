"""Engine: KV capacity binds (KV cache nearly full with requests waiting, or preemptions): new requests wait for
cache blocks and running ones are evicted and recomputed."""

from __future__ import annotations

from exporter.diagnose.model import Readings, Verdict, number, percent
from exporter.diagnose.verdicts.bottleneck import MODEL, judge_for, queries_for, value


def _describe(r: Readings, ns: str, model: str) -> tuple[str, str, str, list[str]]:
    usage = value(r, VERDICT.qid("usage"), ns, model)
    preempted = value(r, VERDICT.qid("preemptions"), ns, model)
    parts = []
    if usage is not None:
        parts.append(f"KV cache up to {percent(usage)} full")
    if preempted:
        parts.append(f"{number(preempted)} preemptions/s")
    detail = f" ({', '.join(parts)})" if parts else ""
    return "KV capacity", detail, "requests wait for cache blocks", ["usage", "preemptions"]


VERDICT: Verdict = Verdict(
    id="engine.kv_capacity",
    stage="engine",
    owner="application",
    panel="Bottleneck",
    fix="Give each replica more KV cache or need less of it: a shorter --max-model-len (the context real "
    "requests need), fewer concurrent sequences (--max-num-seqs), a quantised KV cache, a larger "
    "--gpu-memory-utilization; or add replicas.",
    queries=queries_for(
        "kv_capacity",
        {
            "usage": f"max by ({MODEL}) (max_over_time(llm_kv_cache_usage_ratio{{$NSM}}[$W]))",
            "preemptions": f"sum by ({MODEL}) (rate(llm_preemptions_total{{$NSM}}[$W]))",
        },
    ),
    judge=judge_for(lambda: VERDICT, _describe),
    condition="share",
)
