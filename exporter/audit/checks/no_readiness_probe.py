"""no-readiness-probe: the engine container has no readiness probe."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, ok
from exporter.audit.model import Surroundings


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    probe = subject.engine_container.readiness
    if probe is None:
        return fail(f"container {subject.engine_container.name} has no readinessProbe")
    return ok(f"readinessProbe ({probe.kind or 'unknown handler'})")


CHECK = Check(
    id="no-readiness-probe",
    severity="warning",
    reason="Readiness should pass only once the model is loaded and can really serve; without it a replica "
    "takes traffic while its weights are still loading.",
    fix="Add a readinessProbe on the engine's health endpoint (vLLM, SGLang, TGI: httpGet /health on the "
    "serving port; llama-server: /health).",
    reads=(),
    evaluate=evaluate,
    engine_agnostic=True,
)
