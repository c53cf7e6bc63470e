"""SARIF 2.1.0 for CI code scanning: one run of one tool, its rules, and results located in files.

`check` and `audit` both report in it, so GitHub, GitLab and other code-scanning views show their findings
beside the lines they concern. Only the fields those consumers read are written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from exporter import __version__

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
Level = Literal["error", "warning", "note", "none"]


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str  # shortDescription: one sentence
    help: str = ""  # the fix, shown beside each result
    help_uri: str = ""


@dataclass(frozen=True)
class Finding:
    rule_id: str
    level: Level
    message: str
    uri: str  # the file, relative to the repository root where it can be
    line: int | None = None  # 1-based; None when the file has no line to point at (a generated dashboard)


def document(tool: str, rules: Sequence[Rule], findings: Sequence[Finding]) -> dict[str, Any]:
    """The SARIF log: rules listed once each, in the order given; every finding refers to one of them."""
    index = {rule.id: i for i, rule in enumerate(rules)}
    unknown = sorted({f.rule_id for f in findings} - index.keys())
    if unknown:
        raise ValueError(f"findings of undeclared rules: {', '.join(unknown)}")
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": tool,
                        "version": __version__,
                        "rules": [_rule(rule) for rule in rules],
                    }
                },
                "results": [_result(f, index[f.rule_id]) for f in findings],
            }
        ],
    }


def write(tool: str, rules: Sequence[Rule], findings: Sequence[Finding], out: TextIO) -> None:
    json.dump(document(tool, rules, findings), out, indent=1)
    out.write("\n")


def _rule(rule: Rule) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": rule.id, "shortDescription": {"text": rule.summary}}
    if rule.help:
        entry["help"] = {"text": rule.help}
    if rule.help_uri:
        entry["helpUri"] = rule.help_uri
    return entry


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": {"uri": finding.uri}}
    if finding.line is not None:
        location["region"] = {"startLine": finding.line}
    return {
        "ruleId": finding.rule_id,
        "ruleIndex": rule_index,
        "level": finding.level,
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": location}],
    }
