"""`render --out` options as rewrites of the rendered alert files: what the installed package applies to the
files it ships (exporter/bundle/data/), where a source checkout renders the same from alerts/.

Each rewrite reads the file as data and writes it back in the generator's format (exporter/bundle/rulefile.py),
so its output is the generator's for the same option byte for byte (tests/bundle/test_render.py).
"""

from __future__ import annotations

import json
import re

import yaml

from exporter.bundle import rulefile

# The runbook link of the committed files (alerts/thresholds.py RUNBOOK_URL): `docs/runbook.md#<anchor>`
RELATIVE_RUNBOOK = "docs/runbook.md"
# Grafana's data source uids: at most 40 letters, digits, `-` and `_`
_DATASOURCE_UID = re.compile(r"[A-Za-z0-9_-]{1,40}")
# Grafana's server-side expressions (reduce, math) sit in a rule's data with this uid: not a data source
EXPRESSION_UID = "-100"


def datasource_uid(value: str) -> str:
    """argparse type of --datasource-uid: a Grafana data source uid."""
    if not _DATASOURCE_UID.fullmatch(value):
        raise ValueError(f"{value!r} is not a Grafana data source uid (1 to 40 letters, digits, - and _)")
    return value


def _link(link: str, url: str) -> str:
    prefix = RELATIVE_RUNBOOK + "#"
    return url + "#" + link.removeprefix(prefix) if link.startswith(prefix) else link


def runbook_links(text: str, url: str) -> str:
    """A Prometheus rule file or PrometheusRule with every `runbook_url: docs/runbook.md#<anchor>` as `url#<anchor>`."""
    data = yaml.safe_load(text)
    for group in rulefile.rule_groups(data):
        for rule in group["rules"]:
            annotations = rule.get("annotations", {})
            if "runbook_url" in annotations:
                annotations["runbook_url"] = _link(annotations["runbook_url"], url)
    return rulefile.dump_yaml(text, data)


def grafana_runbook_links(text: str, url: str) -> str:
    """Grafana-managed alert rules with every runbook link as `url#<anchor>`."""
    data = json.loads(text)
    for rule in rulefile.grafana_rules(data):
        annotations = rule.get("annotations", {})
        if "runbook_url" in annotations:
            annotations["runbook_url"] = _link(annotations["runbook_url"], url)
    return rulefile.dump_json(data)


def grafana_datasource(text: str, uid: str) -> str:
    """Grafana-managed alert rules with every query on the data source of uid `uid`."""
    data = json.loads(text)
    for rule in rulefile.grafana_rules(data):
        for query in rule["grafana_alert"]["data"]:
            if query["datasourceUid"] == EXPRESSION_UID:
                continue
            query["datasourceUid"] = uid
            model = query["model"]
            if isinstance(model.get("datasource"), dict):
                model["datasource"]["uid"] = uid
            elif "datasource" in model:
                model["datasource"] = uid
    return rulefile.dump_json(data)
