"""Every PromQL query of dashboards, rule files and KEDA ScaledObjects, with where it came from.

Dashboards: Grafana JSON (panels, nested rows), or a ConfigMap holding it (the Grafana sidecar's format).
Rules: plain rule files and `PrometheusRule` objects. KEDA: `ScaledObject` triggers of type `prometheus`.
Grafana variables are substituted with their "All" value (`.*`) unless given.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from exporter.bundle.promql import substitute

SUFFIXES = (".json", ".yaml", ".yml")


@dataclass(frozen=True)
class Query:
    source: str  # file (and document) it came from
    where: str  # panel, rule or trigger
    expr: str  # ready to run: variables substituted
    alert: bool = False  # an alerting rule's condition: empty is its healthy state, so check its selectors


class BadFileError(Exception):
    pass


def dashboard_queries(dashboard: Mapping[str, Any], source: str, values: Mapping[str, str]) -> Iterator[Query]:
    names = [v.get("name", "") for v in dashboard.get("templating", {}).get("list", []) if isinstance(v, dict)]
    variables = {name: ".*" for name in names if name}
    variables.update(values)
    yield from _panels(dashboard.get("panels", []), source, variables)
    for row in dashboard.get("rows", []) or []:  # the pre-5.0 layout
        yield from _panels(row.get("panels", []), source, variables)


def _panels(panels: list[Any], source: str, variables: Mapping[str, str]) -> Iterator[Query]:
    for panel in panels:
        if not isinstance(panel, dict):
            continue
        yield from _panels(panel.get("panels", []), source, variables)  # collapsed rows
        for target in panel.get("targets", []) or []:
            expr = target.get("expr") if isinstance(target, dict) else None
            if isinstance(expr, str) and expr.strip() and not target.get("hide"):
                where = f"panel {panel.get('title', '?')!r} query {target.get('refId', '?')}"
                yield Query(source, where, substitute(expr, variables))


def rule_queries(groups: list[Any], source: str) -> Iterator[Query]:
    for group in groups:
        for rule in group.get("rules", []) if isinstance(group, dict) else []:
            if not isinstance(rule, dict) or not isinstance(rule.get("expr"), str):
                continue
            if "alert" in rule:
                yield Query(source, f"alert {rule['alert']}", rule["expr"], alert=True)
            else:
                yield Query(source, f"recording rule {rule.get('record', '?')}", rule["expr"])


def _scaled_object(doc: Mapping[str, Any], source: str) -> Iterator[Query]:
    name = doc.get("metadata", {}).get("name", "?")
    for i, trigger in enumerate(doc.get("spec", {}).get("triggers", []) or []):
        if isinstance(trigger, dict) and trigger.get("type") == "prometheus":
            query = trigger.get("metadata", {}).get("query")
            if isinstance(query, str):
                yield Query(source, f"ScaledObject {name} trigger {i}", query)


def document_queries(doc: Any, source: str, values: Mapping[str, str]) -> Iterator[Query]:
    if not isinstance(doc, dict):
        return
    kind = doc.get("kind")
    if kind == "PrometheusRule":
        yield from rule_queries(doc.get("spec", {}).get("groups", []), source)
    elif kind == "ScaledObject":
        yield from _scaled_object(doc, source)
    elif kind == "ConfigMap":
        for key, text in (doc.get("data") or {}).items():
            if str(key).endswith(".json"):
                try:
                    yield from document_queries(json.loads(text), f"{source} {key}", values)
                except ValueError:
                    continue
    elif "groups" in doc:
        yield from rule_queries(doc["groups"], source)
    elif "panels" in doc or "rows" in doc:
        yield from dashboard_queries(doc, source, values)


def file_queries(path: Path, values: Mapping[str, str] | None = None) -> list[Query]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadFileError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        docs = [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))
    except (ValueError, yaml.YAMLError) as exc:
        raise BadFileError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from exc
    return [q for doc in docs for q in document_queries(doc, str(path), values or {})]


def expand(paths: list[Path]) -> list[Path]:
    """Files as given, and directories searched for dashboards and YAML."""
    out = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()))
        else:
            out.append(path)
    return out
