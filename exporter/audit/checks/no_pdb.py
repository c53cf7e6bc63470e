"""no-pdb: no PodDisruptionBudget covers the engine's pods."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, ok
from exporter.audit.model import Surroundings


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    w = subject.workload
    found = [p for p in around.pdbs if p.namespace == w.namespace and p.selector.matches(w.pod_labels)]
    if not found:
        return fail("no PodDisruptionBudget selects its pods")
    return ok("PodDisruptionBudget " + ", ".join(p.name for p in found))


CHECK = Check(
    id="no-pdb",
    severity="warning",
    reason="Without a PodDisruptionBudget a routine node upgrade can remove half the replicas at once.",
    fix="Add a PodDisruptionBudget selecting the engine pods (maxUnavailable: 1, or minAvailable from the "
    "capacity the traffic needs).",
    reads=("PodDisruptionBudget",),
    evaluate=evaluate,
    engine_agnostic=True,
)
