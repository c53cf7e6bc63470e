"""Which data source a Grafana query runs on (pure): only PromQL is checked; a Loki, Tempo or Elasticsearch
query is skipped, never parsed (LogQL `|=` is no PromQL, and a correct dashboard must not fail the gate).

A reference is what Grafana stores: nothing (the panel's, else the default data source), a name or
`-- Mixed --` (dashboards before 8.3), `{"type": …, "uid": …}`, or a variable (`$ds`, `${ds}`, `[[ds]]`) naming a
data source variable, whose `query` is the plugin it lists, or an export's `${DS_…}` input with its `pluginId`.
A reference that says nothing of its type counts as Prometheus: the check then reads it as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PROMETHEUS = ""  # the kind of a query this check reads
MIXED = "-- Mixed --"
# names that are plugin types in old dashboards ("datasource": "Loki") and Grafana's built-in sources
_NAMED = {
    "loki": "loki",
    "tempo": "tempo",
    "elasticsearch": "elasticsearch",
    "influxdb": "influxdb",
    "cloudwatch": "cloudwatch",
    "jaeger": "jaeger",
    "zipkin": "zipkin",
    "-- grafana --": "grafana",
    "-- dashboard --": "dashboard",
    "grafana": "grafana",
}
_VARIABLE = re.compile(r"^\$\{(\w+)(?::\w+)?\}$|^\$(\w+)$|^\[\[(\w+)(?::\w+)?\]\]$")


def plugin_kind(plugin: str) -> str:
    """PROMETHEUS for a plugin that speaks PromQL (prometheus, and the cloud variants named after it), else the
    plugin's own name."""
    return PROMETHEUS if "prometheus" in plugin.lower() else plugin


class Sources:
    """What one dashboard's references resolve to: its data source variables and its export inputs."""

    def __init__(self, dashboard: Mapping[str, Any]) -> None:
        self.variables: dict[str, str] = {}
        for raw in (dashboard.get("templating") or {}).get("list") or []:
            if isinstance(raw, dict) and raw.get("type") == "datasource" and isinstance(raw.get("name"), str):
                self.variables[raw["name"]] = str(raw.get("query") or "")
        for raw in dashboard.get("__inputs") or []:
            if isinstance(raw, dict) and raw.get("type") == "datasource" and isinstance(raw.get("name"), str):
                self.variables[raw["name"]] = str(raw.get("pluginId") or "")

    def kind(self, ref: Any) -> str | None:
        """PROMETHEUS, another plugin's name, MIXED, or None when the reference is absent (inherit)."""
        if ref is None or ref in ("", {}):
            return None
        if isinstance(ref, dict):
            uid = str(ref.get("uid") or "")
            if uid == MIXED or (ref.get("type") == "datasource" and not uid):
                return MIXED
            if isinstance(ref.get("type"), str) and ref["type"]:
                return plugin_kind(ref["type"])
            return self._named(uid) if uid else None
        return self._named(str(ref))

    def _named(self, text: str) -> str:
        if text == MIXED:
            return MIXED
        m = _VARIABLE.match(text)
        if m:
            plugin = self.variables.get(next(g for g in m.groups() if g), "")
            return plugin_kind(plugin) if plugin else PROMETHEUS
        return plugin_kind(_NAMED.get(text.lower(), "prometheus"))

    def target(self, panel: Mapping[str, Any], target: Mapping[str, Any]) -> str:
        """The kind of one target: its own reference, else its panel's (a Mixed panel's target without one runs
        on the default data source, taken as Prometheus)."""
        own = self.kind(target.get("datasource"))
        if own is not None and own != MIXED:
            return own
        inherited = self.kind(panel.get("datasource"))
        return PROMETHEUS if inherited in (None, MIXED) else inherited

    def variable_ok(self, raw: Mapping[str, Any]) -> bool:
        """Whether a query variable runs on Prometheus (a Loki `label_values` is not ours to resolve)."""
        return raw.get("type") != "query" or self.kind(raw.get("datasource")) in (None, PROMETHEUS, MIXED)
