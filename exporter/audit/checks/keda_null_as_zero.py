"""keda-null-as-zero: a KEDA prometheus trigger that reads an empty result as 0."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, na, ok
from exporter.audit.model import Surroundings, autoscalers_of


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    triggers = [
        (a.name, t)
        for a in autoscalers_of(subject.workload, around)
        if a.kind == "keda"
        for t in a.keda_triggers
        if t.get("type") == "prometheus"
    ]
    if not triggers:
        return na("no KEDA prometheus trigger scales this workload")
    lax = [
        name
        for name, t in triggers
        if str((t.get("metadata") or {}).get("ignoreNullValues", "true")).lower() != "false"
    ]
    if lax:
        return fail('ignoreNullValues is not "false" in ScaledObject ' + ", ".join(sorted(set(lax))))
    return ok('every prometheus trigger has ignoreNullValues: "false"')


CHECK = Check(
    id="keda-null-as-zero",
    severity="warning",
    reason="Metric names change between engine releases without any error, and KEDA reads the empty result "
    "of a renamed series as 0 and scales down at peak.",
    fix='Set ignoreNullValues: "false" in the trigger\'s metadata so an empty result is an error, and a '
    "fallback (replicas, behavior: currentReplicasIfHigher) that holds capacity meanwhile.",
    reads=("ScaledObject",),
    evaluate=evaluate,
    engine_agnostic=True,
)
