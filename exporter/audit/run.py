"""Run the registry over every engine workload: one finding per workload and check."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from exporter.audit.base import Check, Measured, Outcome, Subject, na, unknown
from exporter.audit.checks import CHECKS
from exporter.audit.model import Surroundings
from exporter.audit.recognise import DEFAULT, UNKNOWN, Recognition, engine_container, serving
from exporter.k8s.workloads import Workload

NOTHING_MEASURED = Measured()
SKIP_ANNOTATION = "llm-exporter.io/audit-skip"
# check id -> the aspect of a workload it judges: where an operator's resource sets it (`Workload.fields`)
ASPECTS = {
    "autoscaler-utilization-signal": "autoscaler", "autoscaler-scale-to-zero": "autoscaler",
    "autoscaler-cooldown-short": "autoscaler", "keda-null-as-zero": "autoscaler", "fixed-replicas": "replicas",
    "round-robin-routing": "replicas", "no-readiness-probe": "readinessProbe", "no-startup-probe": "startupProbe",
    "grace-period-short": "terminationGracePeriodSeconds", "no-prestop": "preStop",
    "no-gpu-toleration": "tolerations", "context-oversized": "args",
}  # fmt: skip


@dataclass(frozen=True)
class Finding:
    workload: Workload
    check: Check
    outcome: Outcome
    engine: str = ""  # the workload's engine (`Subject.engine`): "unknown" for a GPU server not recognised

    def record(self) -> dict[str, str | float | None]:
        """The JSON record of the command's `--output json` (the issue's fields), plus detail and threshold."""
        w, c, o = self.workload, self.check, self.outcome
        return {
            "namespace": w.namespace,
            "kind": w.kind,
            "name": w.name,
            "check": c.id,
            "status": o.status,
            "severity": c.severity,
            "reason": c.reason,
            "fix": c.fix,
            "threshold_source": o.threshold_source,
            "detail": o.detail,
            "threshold": None if o.threshold is None else o.threshold.value,  # seconds (tokens: context)
            "field": self.field,
            "engine": self.engine,
        }

    @property
    def field(self) -> str | None:
        """Where to change it on the resource an operator generated the workload from ("" where that resource
        has no field for it: the operator sets it); None for a workload read as written."""
        fields = self.workload.fields
        if fields is None:
            return None
        aspect = ASPECTS.get(self.check.id)
        if aspect is None:  # a check of the objects around it (a PDB, an Ingress, the nodes)
            return None
        where = fields.get(aspect, "")
        return where or f"not a field of the {self.workload.kind}: {fields.get('release', 'the operator')} sets it"


def skipped(w: Workload) -> set[str]:
    """The check ids the workload opts out of (`llm-exporter.io/audit-skip: "id,id"`, on it or its pods)."""
    text = ",".join(filter(None, (w.annotations.get(SKIP_ANNOTATION), w.pod.annotations.get(SKIP_ANNOTATION))))
    return {part.strip() for part in text.split(",") if part.strip()}


def engines(workloads: Iterable[Workload], how: Recognition = DEFAULT) -> list[Workload]:
    return [w for w in workloads if engine_container(w, how) is not None]


def audit_workload(
    w: Workload,
    around: Surroundings,
    measured: Measured = NOTHING_MEASURED,
    checks: Sequence[Check] = CHECKS,
    how: Recognition = DEFAULT,
) -> list[Finding]:
    """The findings of `w` (an engine workload: [] when it is not one)."""
    found = serving(w, how)
    if found is None:
        return []
    subject = Subject(w, *found, measured)
    opted_out = skipped(w)
    return [
        Finding(
            w,
            check,
            na(f"skipped by {SKIP_ANNOTATION}") if check.id in opted_out else _evaluate(check, subject, around),
            subject.engine,
        )
        for check in checks
    ]


def not_judged(engine: str, checks: Sequence[Check] = CHECKS) -> list[str]:
    """The ids of the checks that need to know the engine, for a workload of `engine`: all of them for
    "unknown", none otherwise."""
    return [c.id for c in checks if not c.engine_agnostic] if engine == UNKNOWN else []


def _evaluate(check: Check, subject: Subject, around: Surroundings) -> Outcome:
    """The check's outcome; an object shaped as no check expected makes that one check unknown, not the audit."""
    if subject.engine == UNKNOWN and not check.engine_agnostic:
        return unknown(
            "engine not recognised from the command, image or ports: this check reads the engine's own flags"
        )
    try:
        return check.evaluate(subject, around)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        return unknown(f"cannot evaluate: {type(exc).__name__}: {exc}")


def audit(
    workloads: Iterable[Workload],
    around: Surroundings,
    measured: Callable[[Workload], Measured] = lambda w: Measured(),
    how: Recognition = DEFAULT,
) -> list[Finding]:
    found: list[Finding] = []
    for w in sorted(workloads, key=lambda w: (w.namespace, w.kind, w.name)):
        found += audit_workload(w, around, measured(w), how=how)
    return found
