"""Grafana's v2 dashboard schema (the default since Grafana 13) read as the classic model (pure).

A v2 dashboard (`apiVersion: dashboard.grafana.app/v2alpha1|v2beta1…`, `kind: Dashboard`) keeps its panels in
`spec.elements` (`kind: Panel`), each with `data.spec.queries[]` (`kind: PanelQuery`), whose `query` is a
`DataQuery`: v2beta1 names the plugin in `group` and the data source in `datasource.name`; v2alpha1 names the
plugin in the query's `kind` and the data source in the PanelQuery's `datasource: {type, uid}`. Variables are
`{kind: QueryVariable|CustomVariable|…, spec: {…}}`. The classic shape returned here is what
`exporter.check.inputs.dashboard_queries` reads: panels with targets, `templating.list`. A panel repeated by a
layout item is read once (v2 keeps the repeat on the layout, not the panel).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GROUP = "dashboard.grafana.app/"
# v2 stores the sort of a variable's options by name; the classic model by number
_SORT = {
    "disabled": 0,
    "alphabeticalAsc": 1,
    "alphabeticalDesc": 2,
    "numericalAsc": 3,
    "numericalDesc": 4,
    "alphabeticalCaseInsensitiveAsc": 5,
    "alphabeticalCaseInsensitiveDesc": 6,
    "naturalAsc": 7,
    "naturalDesc": 8,
}


def is_resource(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == "Dashboard" and str(doc.get("apiVersion") or "").startswith(GROUP)


def is_v2(doc: Mapping[str, Any]) -> bool:
    """A v2 resource, or its bare spec (elements and a layout)."""
    if is_resource(doc):
        return str(doc["apiVersion"]).removeprefix(GROUP).startswith("v2")
    return isinstance(doc.get("elements"), dict) and isinstance(doc.get("layout"), dict)


def classic(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The classic dashboard of a v2 resource or spec."""
    spec = doc.get("spec") if is_resource(doc) else doc
    spec = _map(spec)
    elements = _map(spec.get("elements"))
    panels = [_panel(name, element) for name, element in elements.items() if isinstance(element, dict)]
    variables = [_variable(v) for v in spec.get("variables") or [] if isinstance(v, dict)]
    return {
        "title": spec.get("title"),
        "panels": [p for p in panels if p is not None],
        "templating": {"list": [v for v in variables if v is not None]},
    }


def _spec(kind: Any) -> dict[str, Any]:
    spec = kind.get("spec") if isinstance(kind, dict) else None
    return _map(spec)


def _panel(name: str, element: Mapping[str, Any]) -> dict[str, Any] | None:
    if element.get("kind") != "Panel":  # a LibraryPanel's queries live in the library, not the dashboard
        return None
    spec = _spec(element)
    targets = [_target(q) for q in _spec(spec.get("data")).get("queries") or [] if isinstance(q, dict)]
    return {"title": spec.get("title") or name, "targets": [t for t in targets if t is not None]}


def _target(panel_query: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = _spec(panel_query)
    query = spec.get("query")
    if not isinstance(query, dict):
        return None
    body = _spec(query)
    own = _map(spec.get("datasource"))
    named = _map(query.get("datasource"))
    # v2beta1: the plugin is the DataQuery's group; v2alpha1: the query's kind
    plugin = query.get("group") if query.get("kind") == "DataQuery" else query.get("kind")
    plugin = str(plugin or own.get("type") or "")
    uid = str(named.get("name") or own.get("uid") or "")
    target: dict[str, Any] = {
        "refId": spec.get("refId") or body.get("refId") or "?",
        "hide": bool(spec.get("hidden")),
        "datasource": {"type": plugin, "uid": uid} if plugin else ({"uid": uid} if uid else None),
    }
    for key in ("expr", "query"):
        if isinstance(body.get(key), str):
            target[key] = body[key]
    return target


def _variable(variable: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = str(variable.get("kind") or "")
    spec = _spec(variable)
    if not kind.endswith("Variable") or not isinstance(spec.get("name"), str):
        return None
    kind = kind.removesuffix("Variable").lower()
    out: dict[str, Any] = {
        "name": spec["name"],
        "type": {"text": "textbox"}.get(kind, kind),
        "current": spec.get("current"),
        "options": spec.get("options") or [],
        "multi": spec.get("multi"),
        "includeAll": spec.get("includeAll"),
        "allValue": spec.get("allValue"),
        "regex": spec.get("regex"),
        "sort": _SORT.get(str(spec.get("sort")), 0),
        "definition": spec.get("definition"),
    }
    query = spec.get("query")
    if kind == "datasource":
        out["query"] = spec.get("pluginId") or ""
    elif isinstance(query, dict):  # a query variable's DataQuery
        body = _spec(query)
        out["query"] = body.get("query") or body.get("expr") or spec.get("definition") or ""
        plugin = query.get("group") if query.get("kind") == "DataQuery" else query.get("kind")
        own = _map(spec.get("datasource"))
        plugin = plugin or own.get("type")
        out["datasource"] = {"type": str(plugin)} if plugin else None
    else:
        out["query"] = query if isinstance(query, str) else ""
    return out


def _map(value: Any) -> dict[str, Any]:
    """`value` when it is a mapping, else an empty one (a list or a scalar where a map is due reads as none)."""
    return value if isinstance(value, dict) else {}
