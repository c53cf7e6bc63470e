"""Scaling: the autoscaler stays at its minimum while its workload's queue grows: its trigger does not see the
queue (CPU or GPU utilisation, a wrong query), or reacts slower than the queue builds."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose import workloads
from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, number
from exporter.diagnose.verdicts import autoscaler_query_empty


def queries(limits: Limits) -> dict[str, str]:
    return {
        "held": "llm:autoscaler_at_min_while_queue_grows{$NS} == 1",
        "waiting": "llm:workload_requests_waiting{$NS}",
        "models": workloads.MODELS,
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    q = VERDICT.qid
    empty_names = {
        (s.label("namespace"), s.label("name")) for s in r.samples(autoscaler_query_empty.VERDICT.qid("empty"))
    }
    out = []
    for s in r.samples(q("held")):
        ns, workload, autoscaler = s.label("namespace"), s.label("workload"), s.label("autoscaler")
        if (ns, autoscaler) in empty_names:
            continue  # its trigger reads an empty query: that verdict says why
        keep, model = workloads.in_scope(r, q("models"), ns, workload)
        if not keep:
            continue
        queue = r.samples(q("waiting"))
        waiting = next((x.value for x in queue if (x.label("namespace"), x.label("workload")) == (ns, workload)), 0.0)
        out.append(
            VERDICT.finding(
                f"autoscaler {autoscaler} ({s.label('kind')}) holds {ns}/{workload} at its minimum while its queue "
                f"grows ({number(waiting)} waiting): its trigger does not see the queue",
                [r.evidence(q("held"), s.value), r.evidence(q("waiting"), waiting)],
                ns,
                model,
                weight=waiting,
            )
        )
    return out


VERDICT = Verdict(
    id="scaling.autoscaler_at_min",
    stage="scaling",
    owner="platform",
    panel="Autoscaler held at a limit",
    fix="Scale on the queue depth (llm_requests_waiting), not CPU or GPU utilisation; raise the minimum replicas "
    "so that the queue at peak can wait one cold start, and lengthen the cool-down.",
    queries=queries,
    judge=judge,
    condition="held",
)
