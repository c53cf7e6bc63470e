"""ingress-timeout-short: an ingress read timeout that cuts long generations."""

from __future__ import annotations

from exporter.audit.base import DEFAULT_INGRESS_SECONDS, Check, Outcome, Subject, fail, na, ok, pick, seconds, unknown
from exporter.audit.model import Surroundings, frontend_timeouts, frontends_of


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    fronts = frontends_of(subject.workload, around)
    if not fronts:
        return na("no Ingress, HTTPRoute or Route reaches it")
    threshold = pick(subject.measured.request_seconds, DEFAULT_INGRESS_SECONDS)
    short, blind = [], []
    for f in fronts:
        timeouts = frontend_timeouts(subject.workload, f, around)
        known = [t for t in timeouts if t is not None]
        cut = min(known, key=lambda t: t.seconds) if known else None
        if cut is not None and cut.seconds <= threshold.value:
            short.append(
                f"{f.kind} {f.name}: {seconds(cut.seconds)}" + (" (default)" if cut.source == "default" else "")
            )
        elif None in timeouts:
            blind.append(f"{f.kind} {f.name}")
    if short:
        return fail(
            f"read timeout not above the longest generation ({seconds(threshold.value)}): " + "; ".join(short),
            threshold,
        )
    if blind:
        return unknown("timeout not readable from the object (controller default): " + ", ".join(blind), threshold)
    return ok(f"every read timeout above {seconds(threshold.value)}", threshold)


CHECK = Check(
    id="ingress-timeout-short",
    severity="warning",
    reason="Many ingress controllers default to a 60 s read timeout (OpenShift's router and GKE's load balancer "
    "to 30 s), which kills long generations midway; users report a crash you cannot reproduce with short test "
    "prompts.",
    fix="Raise the read timeout above the p99 request duration (nginx.ingress.kubernetes.io/proxy-read-timeout, "
    "nginx.org/proxy-read-timeout, haproxy.router.openshift.io/timeout, HTTPRoute rules[].timeouts.request, the "
    "ALB idle timeout, a GKE BackendConfig's timeoutSec); 60 s when not measured.",
    reads=("Ingress", "HTTPRoute", "Route", "Service", "InferencePool", "BackendConfig"),
    evaluate=evaluate,
    engine_agnostic=True,
)
