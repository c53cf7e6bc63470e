"""The chart's prometheusRule.runbookUrl, with the real helm: every alert's runbook_url becomes
`<runbookUrl>#<anchor>` of a `## <AlertName>` heading of docs/runbook.md, nothing else in the rules moves,
and a value that is not an absolute http(s) URL fails the rendering with a message naming it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.deploy import crd_schemas
from tests.deploy.helm import CHART, NAMESPACE, helm, template
from tests.deploy.manifests import ROOT, find

URL = "https://runbooks.example.com/llm-exporter.md"
RELATIVE = "docs/runbook.md"
RUNBOOK = ROOT / "docs" / "runbook.md"
RULE = ("PrometheusRule", "llm-inference-exporter")


def runbook_anchors() -> dict[str, str]:
    """`## <AlertName>` headings of docs/runbook.md → their GitHub slug (an alert name has no spaces or
    punctuation, so the slug is the lowercased name)."""
    names = re.findall(r"^## (LLM\w+)\s*$", RUNBOOK.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {name: name.lower() for name in names}


def rules_of(spec: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [rule for group in spec["groups"] for rule in group["rules"] if key in rule]


def rendered_spec(*sets: str) -> dict[str, Any]:
    spec: dict[str, Any] = find(template(sets=sets), *RULE)["spec"]
    return spec


def test_the_default_keeps_the_generated_relative_links() -> None:
    anchors = runbook_anchors()
    alerts = rules_of(rendered_spec(), "alert")
    assert alerts
    for rule in alerts:
        assert rule["annotations"]["runbook_url"] == f"{RELATIVE}#{anchors[rule['alert']]}"


def test_runbook_url_makes_every_alert_link_absolute() -> None:
    anchors = runbook_anchors()
    default = rendered_spec()
    objs = template(sets=(f"prometheusRule.runbookUrl={URL}",))
    rule_obj = find(objs, *RULE)
    crd_schemas.validate(rule_obj)
    spec = rule_obj["spec"]
    alerts = rules_of(spec, "alert")
    assert [r["alert"] for r in alerts] == [r["alert"] for r in rules_of(default, "alert")]
    assert len(alerts) >= 20
    for rule in alerts:
        name = rule["alert"]
        assert name in anchors, f"docs/runbook.md has no '## {name}' heading"
        assert rule["annotations"]["runbook_url"] == f"{URL}#{anchors[name]}", name
    # the recording rules, and everything of the alerts but the link, are as generated
    assert rules_of(spec, "record") == rules_of(default, "record")
    assert len(rules_of(spec, "record")) > 0
    for got, expected in zip(alerts, rules_of(default, "alert"), strict=True):
        assert {**got, "annotations": {**got["annotations"], "runbook_url": None}} == {
            **expected,
            "annotations": {**expected["annotations"], "runbook_url": None},
        }
    assert [(g["name"], g["interval"]) for g in spec["groups"]] == [
        (g["name"], g["interval"]) for g in default["groups"]
    ]


def test_runbook_url_changes_only_the_prometheus_rule() -> None:
    def others(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [o for o in objs if (o["kind"], o["metadata"]["name"]) != RULE]

    assert others(template(sets=(f"prometheusRule.runbookUrl={URL}",))) == others(template())


@pytest.mark.parametrize("value", [RELATIVE, "ftp://runbooks.example.com/llm-exporter.md", f"{URL}#top"])
def test_a_value_that_is_not_an_absolute_http_url_fails(value: str) -> None:
    result = helm(
        "template",
        "llm-exporter",
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--set-string",
        f"prometheusRule.runbookUrl={value}",
    )
    assert result.returncode != 0
    assert "prometheusRule.runbookUrl must be an absolute http:// or https:// URL" in result.stderr
    assert f'got "{value}"' in result.stderr
    assert "kind: PrometheusRule" not in result.stdout


def test_an_http_url_is_accepted_too() -> None:
    alerts = rules_of(rendered_spec("prometheusRule.runbookUrl=http://wiki.internal/llm/runbook"), "alert")
    (down,) = [a for a in alerts if a["alert"] == "LLMExporterDown"]
    assert down["annotations"]["runbook_url"] == "http://wiki.internal/llm/runbook#llmexporterdown"
