"""The bundle over many clusters: the rendered files, every query in them rewritten to keep a cluster label.

The rewrite of one expression is exporter/promql/cluster.py's (`clustered` for rules, `filtered` for panels,
which also filter on the dashboards' cluster variable); here it is applied to the rendered files, not to the
sources, so every rule and panel is covered without one of them naming the label. With no label nothing is
rewritten and the output is the single-cluster one byte for byte.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from exporter.bundle import rulefile
from exporter.promql.cluster import VARIABLE, clustered, filtered, variable_query


def rule_file(text: str, label: str) -> str:
    """A Prometheus rule file, or a PrometheusRule object, with every expression clustered."""
    data = yaml.safe_load(text)
    for group in rulefile.rule_groups(data):
        for rule in group["rules"]:
            rule["expr"] = clustered(rule["expr"], label)
    return rulefile.dump_yaml(text, data)


def grafana_rules(text: str, label: str) -> str:
    """Grafana-managed alert rules (file provisioning) with every Prometheus query clustered."""
    data = json.loads(text)
    for rule in rulefile.grafana_rules(data):
        for query in rule["grafana_alert"]["data"]:
            model = query["model"]
            for key in ("expr", "query"):
                if model.get(key):
                    model[key] = clustered(model[key], label)
    return rulefile.dump_json(data)


def cluster_variable(label: str) -> dict[str, Any]:
    """The dashboard's cluster variable: every cluster the exporter's series come from, all by default."""
    return {
        "allValue": ".*",
        "current": {"selected": True, "text": "$__all", "value": "$__all"},
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "hide": 0,
        "includeAll": True,
        "label": "Cluster",
        "multi": True,
        "name": VARIABLE,
        "options": [],
        # engines (node role) or GPUs (cluster role): a cluster with either one is listed
        "query": f'label_values({{__name__=~"llm_engine_up|llm_node_gpus_allocatable"}}, {label})',
        "refresh": 2,
        "regex": "",
        "sort": 1,
        "type": "query",
    }


def _panels(panels: list[dict[str, Any]], label: str) -> None:
    for panel in panels:
        for target in panel.get("targets", []):
            for key in ("expr", "query"):
                if isinstance(target.get(key), str) and target[key]:
                    target[key] = filtered(target[key], label)
            legend = target.get("legendFormat")
            if legend and legend != "__auto":
                target["legendFormat"] = f"{{{{{label}}}}} {legend}"
        _panels(panel.get("panels", []), label)


def dashboard(text: str, label: str) -> str:
    """A dashboard's JSON with a cluster variable and every query filtered on it, each cluster its own series."""
    data = json.loads(text)
    _panels(data.get("panels", []), label)
    for row in data.get("rows", []):
        _panels(row.get("panels", []), label)
    for annotation in (data.get("annotations") or {}).get("list", []):
        if isinstance(annotation.get("expr"), str) and annotation["expr"]:
            annotation["expr"] = filtered(annotation["expr"], label)
    variables = data.setdefault("templating", {}).setdefault("list", [])
    for variable in variables:
        if variable.get("type") == "query" and isinstance(variable.get("query"), str):
            variable["query"] = variable_query(variable["query"], label)
    # right after the data source: the variables below it are filtered on it
    position = next((i + 1 for i, v in enumerate(variables) if v.get("type") == "datasource"), 0)
    variables.insert(position, cluster_variable(label))
    return rulefile.dump_json(data)
