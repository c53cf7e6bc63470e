"""no-prestop: the engine container has no preStop hook."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, ok
from exporter.audit.model import Surroundings


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    if not subject.engine_container.prestop:
        return fail(f"container {subject.engine_container.name} has no lifecycle.preStop")
    return ok("lifecycle.preStop set")


CHECK = Check(
    id="no-prestop",
    severity="warning",
    reason="Without a preStop hook a terminating replica is taken out of the endpoints while it is already "
    "stopping, so each rolling update cuts the streaming requests in flight.",
    fix="Add lifecycle.preStop (e.g. a sleep of a few seconds so the endpoints drop the pod first, or a "
    "script that waits for the engine's running requests to finish), within the grace period.",
    reads=(),
    evaluate=evaluate,
    engine_agnostic=True,
)
