"""Scaling: the autoscaler asks for its maximum while requests queue (LLMAutoscalerMaxedOut): no more capacity
is coming, and the queue, and time to first token, grow with the load."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose import workloads
from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, number

WORKLOAD = "namespace, workload"


def queries(limits: Limits) -> dict[str, str]:
    return {
        "maxed": f"llm:autoscaler_at_max{{$NS}} == 1 and on ({WORKLOAD})"
        f" (llm:workload_requests_waiting{{$NS}} > {number(limits.queue_waiting)})",
        "waiting": "llm:workload_requests_waiting{$NS}",
        "max": "max by (namespace, workload, autoscaler, kind) (llm_autoscaler_max_replicas{$NS})",
        "models": workloads.MODELS,
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    q = VERDICT.qid
    out = []
    for s in r.samples(q("maxed")):
        ns, workload, autoscaler = s.label("namespace"), s.label("workload"), s.label("autoscaler")
        keep, model = workloads.in_scope(r, q("models"), ns, workload)
        if not keep:
            continue
        waiting = _value(r, q("waiting"), ns, workload)
        maximum = _value(r, q("max"), ns, workload)
        out.append(
            VERDICT.finding(
                f"autoscaler {autoscaler} ({s.label('kind')}) of {ns}/{workload} is at its maximum of "
                f"{number(maximum)} replicas while {number(waiting)} requests wait: no more capacity is coming",
                [r.evidence(q("maxed"), s.value), r.evidence(q("waiting"), waiting), r.evidence(q("max"), maximum)],
                ns,
                model,
                weight=waiting,
            )
        )
    return out


def _value(r: Readings, qid: str, namespace: str, workload: str) -> float:
    return max(
        (s.value for s in r.samples(qid) if s.label("namespace") == namespace and s.label("workload") == workload),
        default=0.0,
    )


VERDICT = Verdict(
    id="scaling.autoscaler_at_max",
    stage="scaling",
    owner="platform",
    panel="Autoscaler held at a limit",
    fix="Raise the autoscaler's maximum if GPUs are free (check Free GPUs and Pending GPU pods by reason); "
    "otherwise shed or reroute load, or lower the cost of a replica (quantisation, shorter contexts).",
    queries=queries,
    judge=judge,
    condition="maxed",
)
