"""grace-period-short: a termination grace period shorter than the longest stream."""

from __future__ import annotations

from exporter.audit.base import DEFAULT_REQUEST_SECONDS, Check, Outcome, Subject, fail, ok, pick, seconds
from exporter.audit.model import Surroundings
from exporter.k8s.workloads import default

API_DEFAULT = default("Pod", "terminationGracePeriodSeconds")


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    grace = subject.workload.pod.grace_period
    value = API_DEFAULT if grace is None else grace
    threshold = pick(subject.measured.request_seconds, DEFAULT_REQUEST_SECONDS)
    shown = f"terminationGracePeriodSeconds {value} s" + (" (the default)" if grace is None else "")
    if value <= threshold.value:
        return fail(f"{shown}, not above the longest request ({seconds(threshold.value)})", threshold)
    return ok(shown, threshold)


CHECK = Check(
    id="grace-period-short",
    severity="warning",
    reason="One generation easily runs past the default 30 s, so with the default grace period every rolling "
    "update cuts the streams in flight and users see deployments as random failures.",
    fix="Set terminationGracePeriodSeconds above the p99 request duration (llm_request_duration_seconds; more "
    "than 30 s when not measured), plus the preStop hook's sleep.",
    reads=(),
    evaluate=evaluate,
    engine_agnostic=True,
)
