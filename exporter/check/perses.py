"""Perses dashboards read as the classic Grafana model (pure).

Three containers hold the same dashboard spec (`display`, `variables`, `panels`, `layouts`): Perses' own
`kind: Dashboard` (`spec`), the operator's `PersesDashboard` of `perses.dev/v1alpha1` (`spec`) and of
`perses.dev/v1alpha2` (`spec.config`). Panels are a map of `kind: Panel`, each with `queries[]` whose
`spec.plugin` is the query: `PrometheusTimeSeriesQuery` (`spec.query`) is PromQL; any other plugin (Loki,
Tempo…) is named so that it is skipped. Variables map onto Grafana's: a static list is a custom variable, a
label-values variable `label_values(matcher, label)`, a PromQL variable `query_result(expr)` (with its label),
a text variable a constant. Perses writes `$var`, `${var}` and `${var:format}` as Grafana does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROMQL = "PrometheusTimeSeriesQuery"


def dashboard_spec(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The dashboard spec of a Perses container, None when `doc` is none."""
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return None
    if doc.get("kind") == "PersesDashboard":
        config = spec.get("config")
        return config if isinstance(config, dict) else spec  # v1alpha2 : v1alpha1
    if doc.get("kind") == "Dashboard" and isinstance(spec.get("panels"), dict):
        return spec
    return None


def _spec(kind: Any) -> dict[str, Any]:
    spec = kind.get("spec") if isinstance(kind, dict) else None
    return _map(spec)


def classic(spec: Mapping[str, Any]) -> dict[str, Any]:
    panels = _map(spec.get("panels"))
    variables = [_variable(v) for v in spec.get("variables") or [] if isinstance(v, dict)]
    return {
        "title": _spec({"spec": spec.get("display")}).get("name"),
        "panels": [_panel(str(key), panel) for key, panel in panels.items() if isinstance(panel, dict)],
        "templating": {"list": [v for v in variables if v is not None]},
    }


def _panel(key: str, panel: Mapping[str, Any]) -> dict[str, Any]:
    spec = _spec(panel)
    title = _spec({"spec": spec.get("display")}).get("name") or key
    targets = []
    for i, query in enumerate(spec.get("queries") or []):
        plugin = _spec(query).get("plugin")
        kind = str(plugin.get("kind") or "") if isinstance(plugin, dict) else ""
        body = _spec(plugin)
        text = body.get("query") if isinstance(body.get("query"), str) else body.get("expr")
        if not isinstance(text, str):
            continue
        # a Prometheus query is the classic default; any other plugin is named as the data source's type
        source = None if kind == PROMQL else {"type": kind or "unknown"}
        targets.append({"refId": str(i + 1), "expr": text, "datasource": source})
    return {"title": title, "targets": targets}


def _variable(variable: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = _spec(variable)
    name = spec.get("name")
    if not isinstance(name, str):
        return None
    if variable.get("kind") == "TextVariable":
        value = str(spec.get("value") or "")
        return {"name": name, "type": "constant", "query": value, "current": {"value": value}}
    plugin = _map(spec.get("plugin"))
    body = _spec(plugin)
    kind = plugin.get("kind")
    default = spec.get("defaultValue")
    current = {"value": default} if isinstance(default, (str, list)) and default else None
    out: dict[str, Any] = {
        "name": name,
        "multi": spec.get("allowMultiple"),
        "includeAll": spec.get("allowAllValue"),
        "allValue": spec.get("customAllValue"),
        "current": current,
    }
    if kind == "StaticListVariable":
        values = [v.get("value") if isinstance(v, dict) else v for v in body.get("values") or []]
        return {**out, "type": "custom", "query": ",".join(str(v) for v in values if v is not None)}
    if kind == "PrometheusLabelValuesVariable":
        matchers = [str(m) for m in body.get("matchers") or []]
        label = str(body.get("labelName") or "")
        query = f"label_values({matchers[0]}, {label})" if matchers else f"label_values({label})"
        return {**out, "type": "query", "query": query}
    if kind == "PrometheusPromQLVariable":
        return {**out, "type": "query", "query": f"query_result({body.get('expr') or ''})"}
    return {**out, "type": "custom", "query": ""}  # a variable of another plugin: no value to resolve


def _map(value: Any) -> dict[str, Any]:
    """`value` when it is a mapping, else an empty one (a list or a scalar where a map is due reads as none)."""
    return value if isinstance(value, dict) else {}
