"""The rendered alert files as data and back as text, in the generators' own formats (alerts/formats.py,
grafanalib's write_dashboard), so that a rewrite of a rendered file changes only what it rewrites."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml


def header(text: str) -> str:
    """The leading comment lines of a generated YAML file (kept: they say where the file comes from)."""
    lines = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)


def dump_yaml(text: str, data: Any) -> str:
    """`data` as the YAML generator writes it, under the header of the file `text` it was read from."""
    return header(text) + yaml.safe_dump(data, sort_keys=False, width=1000, allow_unicode=True)


def dump_json(data: Any) -> str:
    # grafanalib's write_dashboard format, which the generators use: sorted keys, indent 2
    return json.dumps(data, sort_keys=True, indent=2) + "\n"


def rule_groups(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The groups of a Prometheus rule file, or of a PrometheusRule object."""
    groups: list[dict[str, Any]] = data["spec"]["groups"] if data.get("kind") == "PrometheusRule" else data["groups"]
    return groups


def grafana_rules(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every rule of a Grafana alert-rule provisioning file."""
    for group in data["groups"]:
        yield from group["rules"]
