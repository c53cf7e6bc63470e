"""Links to the overview dashboard's panels: its fixed uid, and each panel's id (held equal to the generated
dashboards/overview.json by a test), with the window as its time range and the scope (cluster, namespace,
model) as its variables."""

from __future__ import annotations

import urllib.parse

from exporter.promql.cluster import VARIABLE

UID = "llm-inference-overview"

PANEL_IDS = {
    "Time to first token": 5,
    "Queue per replica": 13,
    "Prefix cache hit ratio per replica": 15,
    "Route timeout vs request duration p99": 16,
    "Routes that buffer": 17,
    "Bottleneck": 19,
    "Pending GPU pods by reason": 38,
    "Cold start by phase": 39,
    "Autoscaler held at a limit": 42,
    "Engines up": 45,
    "Missing canonical series": 47,
    "Exporter collectors succeeding": 49,
    "Top tenants by tokens": 61,
}


def link(
    grafana_url: str, panel: str, start_ms: int, end_ms: int, namespace: str, model: str, cluster: str = ""
) -> str:
    params = [("from", str(start_ms)), ("to", str(end_ms))]
    if cluster:  # the dashboard rendered with --cluster-label filters on its `cluster` variable
        params.append((f"var-{VARIABLE}", cluster))
    if namespace:
        params.append(("var-namespace", namespace))
    if model:
        params.append(("var-model", model))
    if panel in PANEL_IDS:
        params.append(("viewPanel", str(PANEL_IDS[panel])))
    return f"{grafana_url.rstrip('/')}/d/{UID}/?{urllib.parse.urlencode(params)}"
