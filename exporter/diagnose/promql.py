"""The verdicts' PromQL templates made concrete: the scope's label matchers, the window and the job selector.

A template writes `$NS` where the namespace matcher goes, `$NSM` for namespace and model, `$W` for the
window, inside its selectors' braces: `llm_engine_up{$NS} == 0`. Rendered without a scope (the recording
rules of the dashboard's Diagnosis row) the braces stay empty, which PromQL accepts after a metric name.

A scope with a cluster (a store of many behind Thanos Query) scopes every query as `check` and the watchdog do
(`exporter.check.scope.Cluster`): the cluster's matcher on every selector, its label kept by every aggregation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from exporter.check.scope import Cluster
from exporter.promql.selectors import scoped


@dataclass(frozen=True)
class Scope:
    namespace: str = ""
    model: str = ""
    window: str = "15m"
    cluster: Cluster | None = None  # one cluster of a store of many; None: the Prometheus holds one cluster


def quote(value: str) -> str:
    """A PromQL string literal (its escapes are Go's, which JSON's are a subset of)."""
    return json.dumps(value)


def render(template: str, scope: Scope, selector: str = "") -> str:
    ns = f"namespace={quote(scope.namespace)}" if scope.namespace else ""
    nsm = ", ".join(m for m in (ns, f"model={quote(scope.model)}" if scope.model else "") if m)
    expr = template.replace("$NSM", nsm).replace("$NS", ns).replace("$W", scope.window)
    expr = scoped(_tidy(expr), selector)
    return scope.cluster.scoped(expr) if scope.cluster is not None else expr


def _tidy(expr: str) -> str:
    """`{, a="b"}`, `{a="b", }` and `{}` left by an empty scope matcher, written `{a="b"}` and ``."""
    expr = re.sub(r"\{\s*,\s*", "{", expr)
    expr = re.sub(r",\s*\}", "}", expr)
    return expr.replace("{}", "")
