"""no-startup-probe: a liveness probe that may kill the engine before its weights are loaded."""

from __future__ import annotations

from exporter.audit.base import DEFAULT_COLD_START_SECONDS, Check, Outcome, Subject, Threshold, fail, ok, pick, seconds
from exporter.audit.model import Surroundings


def _against(budget: float, threshold: Threshold, failing: str, passing: str) -> Outcome:
    """Failing when the probe's budget is shorter than the start-up it must outlast."""
    if budget < threshold.value:
        return fail(f"{failing}, less than the start-up ({seconds(threshold.value)})", threshold)
    return ok(passing, threshold)


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    c = subject.engine_container
    measured = subject.measured.starting_seconds or subject.measured.cold_start_seconds
    threshold = pick(measured, DEFAULT_COLD_START_SECONDS)
    if c.startup is not None:
        budget = c.startup.budget_seconds
        allows = f"startupProbe allows {seconds(budget)}"
        failing = f"{allows} (initialDelaySeconds + periodSeconds × failureThreshold)"
        return _against(budget, threshold, failing, allows)
    if c.liveness is None:
        return ok("no livenessProbe that could kill a loading replica", threshold)
    budget = c.liveness.budget_seconds
    failing = f"no startupProbe, and the livenessProbe restarts it after {seconds(budget)}"
    return _against(budget, threshold, failing, f"no startupProbe, but the livenessProbe waits {seconds(budget)}")


CHECK = Check(
    id="no-startup-probe",
    severity="warning",
    reason="Without a startup probe with a lenient failure threshold the liveness probe can kill the pod in "
    "the middle of loading its weights, a restart loop that looks like a mystery and costs an hour.",
    fix="Add a startupProbe on the health endpoint whose initialDelaySeconds + periodSeconds × "
    "failureThreshold exceeds the measured start-up (llm_replica_startup_seconds p90; 600 s when not measured).",
    reads=(),
    evaluate=evaluate,
    engine_agnostic=True,
)
