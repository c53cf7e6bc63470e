"""The alerts of the bundle, as data built from one `Thresholds` object: the `Alert` record and the assembly.

Each alert group is one module of `alerts/groups/` (its rule tests: `alerts/tests/<group>.yaml`), a function
`alerts(t) -> list[Alert]`; `GROUPS` puts them in rule-file order. Each alert is `query op threshold`: the
Prometheus rule uses the whole expression, Grafana-managed rules use the query and put the comparison in a
math expression. Severities: `critical` pages now, `warning` goes to the work queue, `info` helps
troubleshooting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from alerts.expr import number
from alerts.recording import scoped
from alerts.thresholds import DEFAULT, Thresholds

SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True, kw_only=True)
class Alert:
    name: str
    group: str
    query: str
    # ">", "==", ...; "" with threshold None (the defaults) for queries that are already the condition (absent())
    op: str = ""
    threshold: float | None = None
    for_: str
    severity: str
    summary: str
    description: str
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def expr(self) -> str:
        if self.threshold is None:
            return self.query
        return f"{self.query} {self.op} {number(self.threshold)}"

    @property
    def anchor(self) -> str:
        """The runbook anchor: GitHub's slug of a `## <AlertName>` heading."""
        return self.name.lower()


def _groups() -> tuple[Callable[[Thresholds], list[Alert]], ...]:
    """Each group's `alerts`, in rule-file order (imported here: the group modules import `Alert`)."""
    from alerts.groups import audit, capacity_alerts, engine, exporter, gpu, gpu_health, placement, queries

    return (
        engine.alerts,
        gpu.alerts,
        placement.alerts,
        queries.alerts,
        exporter.alerts,
        gpu_health.alerts,
        audit.alerts,
        capacity_alerts.alerts,
    )


def alerts(t: Thresholds = DEFAULT) -> list[Alert]:
    """Every alert of the bundle, in rule-file order, its llm_* selectors scoped by `t.selector`."""
    return [replace(a, query=scoped(a.query, t.selector)) for group in _groups() for a in group(t)]


def groups(t: Thresholds = DEFAULT) -> dict[str, list[Alert]]:
    """Alerts by rule group, in order of first appearance."""
    out: dict[str, list[Alert]] = {}
    for alert in alerts(t):
        out.setdefault(alert.group, []).append(alert)
    return out


def runbook_url(alert: Alert, t: Thresholds = DEFAULT) -> str:
    return f"{t.runbook_url}#{alert.anchor}"
