"""no-startup-probe: a liveness probe that may kill the engine before its weights are loaded."""

from __future__ import annotations

from exporter.audit.base import DEFAULT_COLD_START_SECONDS, Check, Outcome, Subject, fail, ok, pick, seconds
from exporter.audit.model import Surroundings


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    c = subject.engine_container
    measured = subject.measured.starting_seconds or subject.measured.cold_start_seconds
    threshold = pick(measured, DEFAULT_COLD_START_SECONDS)
    if c.startup is not None:
        if c.startup.budget_seconds < threshold.value:
            return fail(
                f"startupProbe allows {seconds(c.startup.budget_seconds)} (initialDelaySeconds + periodSeconds × "
                f"failureThreshold), less than the start-up ({seconds(threshold.value)})",
                threshold,
            )
        return ok(f"startupProbe allows {seconds(c.startup.budget_seconds)}", threshold)
    if c.liveness is None:
        return ok("no livenessProbe that could kill a loading replica", threshold)
    if c.liveness.budget_seconds < threshold.value:
        return fail(
            f"no startupProbe, and the livenessProbe restarts it after {seconds(c.liveness.budget_seconds)}, "
            f"less than the start-up ({seconds(threshold.value)})",
            threshold,
        )
    return ok(f"no startupProbe, but the livenessProbe waits {seconds(c.liveness.budget_seconds)}", threshold)


CHECK = Check(
    id="no-startup-probe",
    severity="warning",
    reason="Without a startup probe with a lenient failure threshold the liveness probe can kill the pod in "
    "the middle of loading its weights, a restart loop that looks like a mystery and costs an hour.",
    fix="Add a startupProbe on the health endpoint whose initialDelaySeconds + periodSeconds × "
    "failureThreshold exceeds the measured start-up (llm_replica_startup_seconds p90; 600 s when not measured).",
    reads=(),
    evaluate=evaluate,
)
