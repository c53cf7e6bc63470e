"""fixed-replicas: an engine with a fixed replica count and no autoscaler."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, ok
from exporter.audit.model import Surroundings, autoscalers_of


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    scalers = autoscalers_of(subject.workload, around)
    if scalers:
        return ok("scaled by " + ", ".join(f"{a.kind} {a.name}" for a in scalers))
    return fail(f"{subject.workload.declared_replicas} replica(s), no HPA, ScaledObject or PodAutoscaler targets it")


CHECK = Check(
    id="fixed-replicas",
    severity="info",
    reason="Internal AI traffic comes in bursts, and a fixed replica count set once in a quiet week handles "
    "only one of the lull and the burst.",
    fix="Add a queue-depth autoscaler (KEDA ScaledObject on llm_requests_waiting) with a minimum from the "
    "measured cold start, or opt out with llm-exporter.io/audit-skip if the count is deliberate.",
    reads=("HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler"),
    evaluate=evaluate,
    engine_agnostic=True,
)
