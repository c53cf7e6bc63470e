"""autoscaler-scale-to-zero: a user-facing engine that its autoscaler may scale to zero replicas."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, na, ok
from exporter.audit.model import Surroundings, autoscalers_of
from exporter.k8s.autoscalers import Autoscaler


def _lowest(a: Autoscaler) -> str:
    if a.min_replicas > a.lowest_replicas:
        return f"idleReplicaCount {a.lowest_replicas} (minimum {a.min_replicas} while a trigger is active)"
    return f"minimum {a.min_replicas}"


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    scalers = autoscalers_of(subject.workload, around)
    if not scalers:
        return na("no autoscaler targets this workload")
    zero = [a for a in scalers if a.lowest_replicas < 1]
    if zero:
        # KEDA's minReplicaCount defaults to 0: an unset minimum is a scale to zero; so is an idleReplicaCount of 0
        return fail(", ".join(f"{a.kind} {a.name}: {_lowest(a)}" for a in zero))
    return ok("minimum " + ", ".join(str(a.min_replicas) for a in scalers))


CHECK = Check(
    id="autoscaler-scale-to-zero",
    severity="warning",
    reason="A cold start takes minutes, so scale to zero only suits batch work that nobody waits on, never "
    "user-facing inference.",
    fix="Set the minimum to at least 2 (KEDA minReplicaCount, HPA minReplicas, PodAutoscaler minReplicas); "
    'a batch workload that may scale to zero opts out with llm-exporter.io/audit-skip: "autoscaler-scale-to-zero".',
    reads=("HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler"),
    evaluate=evaluate,
    engine_agnostic=True,
)
