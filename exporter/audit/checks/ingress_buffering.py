"""ingress-buffering: an ingress that buffers the streamed response."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, na, ok, unknown
from exporter.audit.model import Surroundings, frontends_of


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    fronts = [f for f in frontends_of(subject.workload, around) if f.kind == "Ingress"]
    if not fronts:
        return na("no Ingress reaches it")
    verdicts = {f"{f.kind} {f.name}": f.buffering for f in fronts}
    on = [name for name, v in verdicts.items() if v]
    if on:
        return fail("buffers responses: " + ", ".join(on))
    blind = [name for name, v in verdicts.items() if v is None]
    if blind:
        return unknown("controller not recognised: " + ", ".join(blind))
    return ok("streams responses")


CHECK = Check(
    id="ingress-buffering",
    severity="warning",
    reason="Response buffering collects tokens and releases them in batches, breaking streaming although "
    "the model runs fine.",
    fix='Turn buffering off for the engine\'s ingress (nginx.ingress.kubernetes.io/proxy-buffering: "off", '
    'nginx.org/proxy-buffering: "false").',
    reads=("Ingress", "Service"),
    evaluate=evaluate,
    engine_agnostic=True,
)
