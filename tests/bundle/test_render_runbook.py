"""`llm-exporter render --runbook-url URL --out DIR`, run as the command: the three alert files in DIR carry
`URL#<anchor>` on every alert and nothing else differs from the generated files, promtool accepts the rule
file, and the repository's generated files are never written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.bundle import render
from tests.bundle.servers import PROMTOOL

ROOT = render.ROOT
URL = "https://runbooks.example.com/llm-exporter.md"
RELATIVE = "docs/runbook.md"
# the generated file of each name --out writes
GENERATED = {
    "llm-exporter.rules.yaml": "alerts/llm-exporter.rules.yaml",
    "prometheusrule.yaml": "deploy/base/generated/prometheusrule.yaml",
    "grafana-alert-rules.json": "alerts/grafana-alert-rules.json",
}
REPOSITORY_FILES = [*GENERATED.values(), "charts/llm-inference-exporter/files/llm-exporter.rules.yaml"]


def llm_exporter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "render", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def anchors() -> dict[str, str]:
    """`## <AlertName>` headings of docs/runbook.md → their GitHub slug (the lowercased name)."""
    names = re.findall(r"^## (LLM\w+)\s*$", (ROOT / RELATIVE).read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {name: name.lower() for name in names}


def snapshot() -> dict[str, tuple[bytes, int]]:
    return {rel: ((ROOT / rel).read_bytes(), (ROOT / rel).stat().st_mtime_ns) for rel in REPOSITORY_FILES}


def prometheus_links(groups: list[dict[str, Any]]) -> dict[str, str]:
    return {r["alert"]: r["annotations"]["runbook_url"] for g in groups for r in g["rules"] if "alert" in r}


def grafana_links(provisioning: dict[str, Any]) -> dict[str, str]:
    return {
        r["grafana_alert"]["title"]: r["annotations"]["runbook_url"] for g in provisioning["groups"] for r in g["rules"]
    }


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    before = snapshot()
    out = tmp_path_factory.mktemp("render") / "alerts"  # not there yet: --out creates it
    result = llm_exporter("--runbook-url", URL, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"wrote {out / name}" for name in GENERATED]
    assert snapshot() == before
    return out


def test_out_writes_exactly_the_three_alert_files(rendered: Path) -> None:
    assert sorted(p.name for p in rendered.iterdir()) == sorted(GENERATED)


def test_every_alert_links_to_its_runbook_section_in_all_three_files(rendered: Path) -> None:
    sections = anchors()
    expected_names = list(
        prometheus_links(yaml.safe_load((ROOT / GENERATED["llm-exporter.rules.yaml"]).read_text())["groups"])
    )
    assert len(expected_names) >= 20
    expected = {}
    for name in expected_names:
        assert name in sections, f"docs/runbook.md has no '## {name}' heading"
        expected[name] = f"{URL}#{sections[name]}"
    rule_file = yaml.safe_load((rendered / "llm-exporter.rules.yaml").read_text())
    manifest = yaml.safe_load((rendered / "prometheusrule.yaml").read_text())
    grafana = json.loads((rendered / "grafana-alert-rules.json").read_text())
    assert prometheus_links(rule_file["groups"]) == expected
    assert prometheus_links(manifest["spec"]["groups"]) == expected
    assert grafana_links(grafana) == expected
    assert manifest["kind"] == "PrometheusRule" and manifest["metadata"]["name"] == "llm-inference-exporter"


def test_only_the_links_differ_from_the_generated_files(rendered: Path) -> None:
    for name, rel in GENERATED.items():
        text = (rendered / name).read_text(encoding="utf-8")
        assert text.count(f"{URL}#") == (ROOT / rel).read_text(encoding="utf-8").count(f"{RELATIVE}#") > 0
        assert text.replace(f"{URL}#", f"{RELATIVE}#") == (ROOT / rel).read_text(encoding="utf-8"), name


def test_promtool_accepts_the_rule_file(rendered: Path) -> None:
    result = subprocess.run(
        [PROMTOOL, "check", "rules", str(rendered / "llm-exporter.rules.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_runbook_url_without_out_fails_and_writes_nothing() -> None:
    before = snapshot()
    result = llm_exporter("--runbook-url", URL)
    assert result.returncode == 2
    assert "--runbook-url needs --out DIR" in result.stderr
    assert result.stdout == ""
    assert snapshot() == before
    assert render.drifted() == []


@pytest.mark.parametrize("value", [RELATIVE, "ftp://runbooks.example.com/llm-exporter.md", f"{URL}#top", "https://"])
def test_a_url_that_is_not_absolute_http_fails(tmp_path: Path, value: str) -> None:
    out = tmp_path / "alerts"
    result = llm_exporter("--runbook-url", value, "--out", str(out))
    assert result.returncode == 2
    assert f"argument --runbook-url: {value!r} is not an absolute http:// or https:// URL" in result.stderr
    assert not out.exists()


def test_check_takes_no_out(tmp_path: Path) -> None:
    result = llm_exporter("--check", "--out", str(tmp_path / "alerts"))
    assert result.returncode == 2
    assert "--check compares the repository's generated files" in result.stderr
    assert not (tmp_path / "alerts").exists()
