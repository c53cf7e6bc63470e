"""Scaling: a KEDA ScaledObject (or ScaledJob) whose trigger query returns nothing (LLMAutoscalerQueryEmpty,
from the query watchdog): KEDA reads the empty result as 0 and holds the workload at its minimum, at peak too.
The write-ups' exact incident: the trigger reads an engine metric that a release renamed."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose import workloads
from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Sample, Verdict, number

KEDA = 'kind=~"ScaledObject|ScaledJob"'


def queries(limits: Limits) -> dict[str, str]:
    return {
        "empty": f"llm_query_empty{{{KEDA}, $NS}} == 1",
        "reason": f"llm_query_empty_reason{{{KEDA}, $NS}} == 1",
        # a ScaledObject drives the HPA the exporter reports with kind "keda" and the ScaledObject's name
        "replicas": 'max by (namespace, workload, autoscaler) (llm_autoscaler_desired_replicas{kind="keda", $NS})',
        "minimum": 'max by (namespace, workload, autoscaler) (llm_autoscaler_min_replicas{kind="keda", $NS})',
        "waiting": "llm:workload_requests_waiting{$NS}",
        "models": workloads.MODELS,
    }


def _of(samples: Sequence[Sample], **labels: str) -> Sample | None:
    return next((s for s in samples if all(s.label(k) == v for k, v in labels.items())), None)


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    q = VERDICT.qid
    out = []
    for s in r.samples(q("empty")):
        ns, name, kind = s.label("namespace"), s.label("name"), s.label("kind")
        why = _of(r.samples(q("reason")), namespace=ns, name=name, location=s.label("location"))
        reason = f" ({why.label('reason')})" if why else ""
        evidence = [r.evidence(q("empty"), s.value)]
        if why:
            evidence.append(r.evidence(q("reason"), why.value))
        held, model = "", ""
        replicas = _of(r.samples(q("replicas")), namespace=ns, autoscaler=name)
        if replicas is not None:
            workload = replicas.label("workload")
            keep, model = workloads.in_scope(r, q("models"), ns, workload)
            if not keep:
                continue
            minimum = _of(r.samples(q("minimum")), namespace=ns, autoscaler=name)
            waiting = _of(r.samples(q("waiting")), namespace=ns, workload=workload)
            held = f" and holds {workload} at {number(replicas.value)} replica(s)"
            if minimum is not None:
                held += f" (its minimum is {number(minimum.value)})"
                evidence.append(r.evidence(q("minimum"), minimum.value))
            evidence.append(r.evidence(q("replicas"), replicas.value))
            if waiting is not None:
                held += f" while {number(waiting.value)} requests wait"
                evidence.append(r.evidence(q("waiting"), waiting.value))
        elif r.model:
            continue  # not known to serve the model asked about
        out.append(
            VERDICT.finding(
                f"the trigger query of {kind} {ns}/{name} ({s.label('location')}) returns nothing{reason}: KEDA "
                f"reads 0{held}",
                evidence,
                ns,
                model,
                weight=waiting.value if replicas is not None and waiting is not None else 0,
            )
        )
    return out


VERDICT = Verdict(
    id="scaling.autoscaler_query_empty",
    stage="scaling",
    owner="platform",
    panel="Autoscaler held at a limit",
    fix="Point the trigger at the stable llm_* name (llm_requests_waiting survives engine renames), or at the "
    "engine's current name; pin ignoreNullValues: false so that KEDA fails loudly instead of scaling down. "
    "`llm-exporter check --prometheus URL scaledobject.yaml` gives the query rewritten.",
    queries=queries,
    judge=judge,
    condition="empty",
)
