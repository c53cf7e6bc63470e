"""autoscaler-cooldown-short: replicas scaled away sooner than one cold start after the load went."""

from __future__ import annotations

from exporter.audit.base import (
    DEFAULT_COLD_START_SECONDS,
    Check,
    Outcome,
    Subject,
    fail,
    na,
    ok,
    pick,
    seconds,
    unknown,
)
from exporter.audit.model import Surroundings, autoscalers_of
from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.durations import duration_seconds

AIBRIX_DELAY = "kpa.autoscaling.aibrix.ai/scale-down-delay"


def _waits(a: Autoscaler) -> list[tuple[str, float]]:
    """The scale-down delays of `a` that apply: the HPA window (none when its scale-down is disabled), and
    KEDA's cooldown when it may reach zero (its minimum or its idleReplicaCount)."""
    if a.kind == "aibrix":  # KPA's delay is an annotation; APA's and the default are the controller's
        delay = duration_seconds(a.annotations.get(AIBRIX_DELAY, ""))
        return [(AIBRIX_DELAY, delay)] if delay is not None else []
    if a.kind == "ray-serve":  # Ray Serve's autoscaling_config.downscale_delay_s (its default where unset)
        return [("downscale_delay_s", a.scale_down_seconds)]
    if a.kind == "knative":  # the KPA's stable window plus its scale-down delay (Knative's defaults where unset)
        return [("autoscaling.knative.dev/window + scale-down-delay", a.scale_down_seconds)]
    waits: list[tuple[str, float]] = []
    if not a.scale_down_disabled:
        unset = " (default)" if a.scale_down_window is None else ""
        waits.append(("scaleDown.stabilizationWindowSeconds" + unset, a.scale_down_seconds))
    if a.kind == "keda" and a.lowest_replicas < 1:
        waits.append(("cooldownPeriod" + (" (default)" if a.cooldown is None else ""), a.cooldown_seconds))
    return waits


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    scalers = autoscalers_of(subject.workload, around)
    if not scalers:
        return na("no autoscaler targets this workload")
    threshold = pick(subject.measured.cold_start_seconds, DEFAULT_COLD_START_SECONDS)
    short = [f"{a.kind} {a.name}: {what} {seconds(v)}" for a in scalers for what, v in _waits(a) if v < threshold.value]
    if short:
        return fail(
            f"scales down after less than the cold start ({seconds(threshold.value)}): " + "; ".join(short), threshold
        )
    if not any(_waits(a) for a in scalers):
        if all(a.scale_down_disabled for a in scalers if a.kind != "aibrix"):
            return ok("scale-down is disabled (selectPolicy: Disabled)", threshold)
        return unknown("an AIBrix PodAutoscaler's scale-down delay is its controller's setting", threshold)
    return ok(f"every scale-down waits at least {seconds(threshold.value)}", threshold)


CHECK = Check(
    id="autoscaler-cooldown-short",
    severity="warning",
    reason="Scaling down aggressively means paying another cold start soon after, so the cooldown must "
    "respect the cold start (the write-ups' ScaledObject waits 10 minutes).",
    fix="Set the scale-down stabilization window (HPA spec.behavior.scaleDown.stabilizationWindowSeconds, KEDA "
    "advanced.horizontalPodAutoscalerConfig.behavior) and KEDA's cooldownPeriod to at least the measured "
    "cold start (llm_replica_startup_seconds p90; 600 s when not measured).",
    reads=("HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler"),
    evaluate=evaluate,
    engine_agnostic=True,
)
