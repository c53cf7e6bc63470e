"""Engine: memory bandwidth binds: decode reads the weights and KV cache every step, and the model's GPUs are
near their bandwidth peak, so streams slow as sequences are added."""

from __future__ import annotations

from exporter.diagnose.model import Readings, Verdict, seconds
from exporter.diagnose.verdicts.bottleneck import judge_for, p99, queries_for, value


def _describe(r: Readings, ns: str, model: str) -> tuple[str, str, str, list[str]]:
    itl = value(r, VERDICT.qid("itl_p99"), ns, model)
    detail = f" ({seconds(itl)} between tokens, p99)" if itl is not None else ""
    return "memory bandwidth", detail, "decode is at the GPU's limit", ["itl_p99"]


VERDICT: Verdict = Verdict(
    id="engine.memory_bandwidth",
    stage="engine",
    owner="application",
    panel="Bottleneck",
    fix="Fewer sequences per replica (--max-num-seqs) and more replicas, a quantised model, or tensor parallelism "
    "over more GPUs.",
    queries=queries_for("memory_bandwidth", {"itl_p99": p99("llm_inter_token_latency_seconds")}),
    judge=judge_for(lambda: VERDICT, _describe),
    condition="share",
)
