"""The alerts of the bundle, as data built from one `Thresholds` object: their assembly (the `Alert` record is
alerts/model.py's).

Each alert group is one module of `alerts/groups/` (its rule tests: `alerts/tests/<group>.yaml`), a function
`alerts(t) -> list[Alert]`; `GROUPS` puts them in rule-file order. Each alert is `query op threshold`: the
Prometheus rule uses the whole expression, Grafana-managed rules use the query and put the comparison in a
math expression. Severities: `critical` pages now, `warning` goes to the work queue, `info` helps
troubleshooting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from alerts.groups import audit, budgets, capacity_alerts, engine, exporter, gpu, gpu_health, placement, queries
from alerts.model import Alert
from alerts.thresholds import DEFAULT, Thresholds
from exporter.promql.selectors import scoped

__all__ = ["GROUPS", "Alert", "alerts", "groups", "runbook_url"]

# each group's `alerts`, in rule-file order
GROUPS: tuple[Callable[[Thresholds], list[Alert]], ...] = (
    engine.alerts,
    gpu.alerts,
    placement.alerts,
    queries.alerts,
    exporter.alerts,
    gpu_health.alerts,
    audit.alerts,
    capacity_alerts.alerts,
    budgets.alerts,
)


def alerts(t: Thresholds = DEFAULT) -> list[Alert]:
    """Every alert of the bundle, in rule-file order, its llm_* selectors scoped by `t.selector`."""
    return [replace(a, query=scoped(a.query, t.selector)) for group in GROUPS for a in group(t)]


def groups(t: Thresholds = DEFAULT) -> dict[str, list[Alert]]:
    """Alerts by rule group, in order of first appearance."""
    out: dict[str, list[Alert]] = {}
    for alert in alerts(t):
        out.setdefault(alert.group, []).append(alert)
    return out


def runbook_url(alert: Alert, t: Thresholds = DEFAULT) -> str:
    return f"{t.runbook_url}#{alert.anchor}"
