"""The SARIF writer shared by `check` and `audit`: exact documents, and no result of an undeclared rule."""

from __future__ import annotations

import io
import json

import pytest

from exporter import __version__, sarif


def test_document_lists_rules_once_and_locates_results() -> None:
    rules = [sarif.Rule("no-pdb", "No PodDisruptionBudget.", help="Add one."), sarif.Rule("stale", "Renamed.")]
    findings = [
        sarif.Finding("stale", "error", "vllm:gpu_cache_usage_perc is gone", "dash.json"),
        sarif.Finding("no-pdb", "warning", "Deployment chat has none", "deploy/chat.yaml", line=3),
    ]
    out = io.StringIO()
    sarif.write("llm-exporter audit", rules, findings, out)
    assert json.loads(out.getvalue()) == {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "llm-exporter audit",
                        "version": __version__,
                        "rules": [
                            {
                                "id": "no-pdb",
                                "shortDescription": {"text": "No PodDisruptionBudget."},
                                "help": {"text": "Add one."},
                            },
                            {"id": "stale", "shortDescription": {"text": "Renamed."}},
                        ],
                    }
                },
                "results": [
                    {
                        "ruleId": "stale",
                        "ruleIndex": 1,
                        "level": "error",
                        "message": {"text": "vllm:gpu_cache_usage_perc is gone"},
                        "locations": [{"physicalLocation": {"artifactLocation": {"uri": "dash.json"}}}],
                    },
                    {
                        "ruleId": "no-pdb",
                        "ruleIndex": 0,
                        "level": "warning",
                        "message": {"text": "Deployment chat has none"},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": "deploy/chat.yaml"},
                                    "region": {"startLine": 3},
                                }
                            }
                        ],
                    },
                ],
            }
        ],
    }


def test_a_result_of_an_undeclared_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="undeclared rules: nope"):
        sarif.document("t", [], [sarif.Finding("nope", "note", "m", "f")])
