"""The walk itself, pure: every verdict judged over the readings, in registry order, then the gate (is anyone
waiting?) and the ranking (see the package docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from exporter.check.scope import Cluster
from exporter.diagnose.model import STAGES, Caveat, Finding, Readings
from exporter.diagnose.registry import VERDICTS
from exporter.diagnose.verdicts.series_missing import caveats
from exporter.diagnose.verdicts.waiting import Wait, who_waits

# the order of the ranking: telemetry, then the causes along the request's path, the unexplained wait last
RANK = {"telemetry": 0, "routing": 1, "scaling": 2, "placement": 3, "engine": 4, "ingress": 5, "waiting": 6}
assert set(RANK) == set(STAGES)

NAMESPACES = "group by (namespace) (last_over_time(llm_engine_info{}[$W]))"
MODELS = "group by (namespace, model) (last_over_time(llm_requests_running{$NS}[$W]))"
TARGETS = 'count(last_over_time(up{job="llm-exporter"}[$W]))'
SCOPE_QUERIES = {"scope.namespaces": NAMESPACES, "scope.models": MODELS, "scope.targets": TARGETS}


class ScopeError(Exception):
    """The namespace or model asked about has no series in the window, or the window has none at all."""


@dataclass(frozen=True)
class Report:
    status: str  # "healthy", "findings" or "unknown"
    start: str
    end: str
    window: str
    namespace: str
    model: str
    waits: tuple[Wait, ...]  # the models whose users wait
    telemetry: tuple[Finding, ...]
    findings: tuple[Finding, ...]  # ranked, telemetry first
    cluster: Cluster | None = None  # the one cluster of a store of many that every query was scoped to
    # what was not judged because the running release never had the series (a healthy report may carry them)
    caveats: tuple[Caveat, ...] = ()

    @property
    def exit_code(self) -> int:
        return {"healthy": 0, "findings": 1, "unknown": 2}[self.status]


def rank(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (RANK[f.stage], -f.weight))


def _waits_for(f: Finding, waiting: Sequence[Wait]) -> bool:
    return any(w.namespace == f.namespace and (not f.model or w.model == f.model) for w in waiting)


def walk(r: Readings, start: str, namespace: str = "") -> Report:
    found: list[Finding] = []
    for verdict in VERDICTS:
        found.extend(verdict.judge(r, found))
    if r.cluster is not None:  # every finding is of the cluster every query was scoped to
        found = [replace(f, cluster=r.cluster.value) for f in found]
    where = f" with {r.cluster}" if r.cluster is not None else ""
    telemetry = [f for f in found if f.stage == "telemetry"]
    waiting = [w for w in who_waits(r) if w.reasons]
    namespaces = sorted({s.label("namespace") for s in r.samples("scope.namespaces")})
    if not namespaces and (not telemetry or not r.samples("scope.targets")):
        raise ScopeError(
            f"no engine series (llm_engine_info){where} in the {r.window} up to {r.at}: the window is empty "
            + (
                "(are --cluster and --at right?)"
                if r.cluster is not None
                else "(is --at right, and does this Prometheus scrape the exporter?)"
            )
        )
    if namespace and namespaces and namespace not in namespaces:
        raise ScopeError(
            f"namespace {namespace!r} has no engine series (llm_engine_info){where} in the {r.window} up to {r.at}; "
            f"namespaces with engines: {', '.join(namespaces)}"
        )
    models = sorted({s.label("model") for s in r.samples("scope.models")})
    if r.model and models and r.model not in models:
        raise ScopeError(
            f"model {r.model!r} has no engine series (llm_requests_running){where} in the {r.window} up to {r.at}"
            f"{' in ' + namespace if namespace else ''}; models: {', '.join(models)}"
        )
    causes = [f for f in found if f.stage != "telemetry" and _waits_for(f, waiting)]
    if telemetry:
        status = "unknown"
    elif waiting:
        status = "findings"
    else:
        status, causes = "healthy", []
    return Report(
        status,
        start,
        r.at,
        r.window,
        namespace,
        r.model,
        tuple(waiting),
        tuple(rank(telemetry)),
        tuple(rank([*telemetry, *causes])),
        r.cluster,
        tuple(caveats(r)),
    )
