"""The alert rules: promtool accepts and unit-tests them, and every alert meets the contract."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

import alerts.groups
from alerts import formats, recording, rules
from alerts.thresholds import DEFAULT, RUNBOOK_URL
from exporter.bundle import render
from tests.bundle.servers import PROMTOOL

ROOT = render.ROOT
RULE_FILE = ROOT / "alerts/llm-exporter.rules.yaml"
TESTS = sorted((ROOT / "alerts/tests").glob("*.yaml"))
CONTRACT = [
    "LLMTimeToFirstTokenBudgetBurn",
    "LLMTimeToFirstTokenBudgetBurnSlow",
    "LLMTimeToFirstTokenP99High",
    "LLMInterTokenLatencyP99High",
    "LLMRequestQueueBacklog",
    "LLMLoadImbalance",
    "LLMKVCacheNearlyFull",
    "LLMEngineDown",
    "LLMMetricMissing",
    "LLMEngineSeriesDropped",
    "LLMEngineUnmappedMetrics",
    "LLMPodPendingWithFreeGPUs",
    "LLMReplicaStartupSlow",
    "LLMAutoscalerMaxedOut",
    "LLMRouteTimeoutBelowRequestDuration",
    "LLMRouteBuffering",
    "LLMClusterViewStale",
    "LLMAutoscalerQueryEmpty",
    "LLMDashboardQueryEmpty",
    "LLMQueryWatchdogFailing",
    "LLMGPUMemoryNearlyFull",
    "LLMGPULost",
    "LLMExporterCollectorFailing",
    "LLMExporterDown",
    "LLMGPUXidError",
    "LLMGPUXidWarning",
    "LLMGPURowRemapFailed",
    "LLMGPUUnhealthyInKubernetes",
    "LLMGPUMemoryHeldOutsidePods",
    "LLMGPUAllocatedIdle",
    "LLMWorkloadCheckFailing",
    "LLMWorkloadCheckAdvisory",
    "LLMPreemptionSustained",
    "LLMRequestsRejected",
    "LLMContextOversized",
    "LLMSpeculativeDecodingAcceptanceLow",
    "LLMTenantBudgetExhaustion",
]


def test_one_module_per_group_each_with_its_rule_tests() -> None:
    # alerts/groups/<group>.py holds the alerts of one rule group, alerts/tests/<group>.yaml its promtool tests;
    # every module is assembled (a module left out of rules.alerts() would ship no rules)
    modules = [importlib.import_module(f"alerts.groups.{m.name}") for m in pkgutil.iter_modules(alerts.groups.__path__)]
    assert modules
    for module in modules:
        name = module.__name__.rsplit(".", 1)[1]
        assert (ROOT / f"alerts/tests/{name}.yaml").is_file(), name
        assert {a.group for a in module.alerts(DEFAULT)} == {module.GROUP}, name
    assert {a.group for a in rules.alerts()} == {m.GROUP for m in modules}
    assert sum(len(m.alerts(DEFAULT)) for m in modules) == len(rules.alerts())


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    # every test file evaluates the whole rule file at each step: about a minute on a busy 2-core machine
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=240, check=False)


def loaded_rules() -> list[dict[str, object]]:
    """The alerting rules of the rule file (the recording rules are tested by their promtool cases)."""
    return [r for g in yaml.safe_load(RULE_FILE.read_text())["groups"] for r in g["rules"] if "alert" in r]


def test_every_recording_rule_has_a_promtool_case() -> None:
    groups = yaml.safe_load(RULE_FILE.read_text())["groups"]
    recorded = {str(r["record"]) for g in groups for r in g["rules"] if "record" in r}
    tested: set[str] = set()
    for path in TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for t in case.get("promql_expr_test", []):
                tested |= set(re.findall(r"llm:[a-z_:0-9]+", t["expr"]))
    # the intermediate signals and the long windows feed the classes and alerts tested above
    feeders = {r for r in recorded if r.startswith(("llm:bottleneck_signal:", "llm:ttft_slo_error_ratio:"))}
    assert recorded - feeders - tested == set()


def test_promtool_checks_the_rule_files(tmp_path: Path) -> None:
    spec = yaml.safe_load((ROOT / "deploy/base/generated/prometheusrule.yaml").read_text())["spec"]
    (tmp_path / "from-prometheusrule.yaml").write_text(yaml.safe_dump(spec))
    files = [RULE_FILE, ROOT / "alerts/vllm-compat.rules.yaml", tmp_path / "from-prometheusrule.yaml"]
    done = promtool("check", "rules", *map(str, files))
    assert done.returncode == 0, done.stdout + done.stderr
    alerting = len(rules.alerts())
    recorded = len(recording.recordings())
    # the rule file and the PrometheusRule hold the same rules
    assert done.stdout.count(f"SUCCESS: {alerting + recorded} rules found") == 2, done.stdout


def test_promtool_unit_tests_pass() -> None:
    done = promtool("test", "rules", *map(str, TESTS))
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_unit_tests_fail_when_a_threshold_moves(tmp_path: Path) -> None:
    # The unit tests pin behaviour: render the rules with another queue threshold and they must notice.
    (tmp_path / "llm-exporter.rules.yaml").write_text(formats.rule_file(replace(DEFAULT, queue_waiting=10)))
    (tmp_path / "tests").mkdir()
    test = tmp_path / "tests/engine.yaml"
    test.write_text((ROOT / "alerts/tests/engine.yaml").read_text())
    done = promtool("test", "rules", str(test))
    assert done.returncode != 0
    assert "LLMRequestQueueBacklog" in done.stdout + done.stderr


def test_alert_names_are_the_contract() -> None:
    assert sorted(str(r["alert"]) for r in loaded_rules()) == sorted(CONTRACT)


@pytest.mark.parametrize("rule", loaded_rules(), ids=lambda r: str(r["alert"]))
def test_every_alert_has_for_severity_summary_description_and_runbook(rule: dict[str, object]) -> None:
    assert re.fullmatch(r"\d+[smh]", str(rule["for"]))
    labels, annotations = rule["labels"], rule["annotations"]
    assert isinstance(labels, dict) and isinstance(annotations, dict)
    assert labels["severity"] in ("critical", "warning", "info")
    assert set(annotations) == {"summary", "description", "runbook_url"}
    assert annotations["summary"] and annotations["description"]
    assert annotations["runbook_url"] == f"{RUNBOOK_URL}#{str(rule['alert']).lower()}"


def github_anchors(markdown: str) -> set[str]:
    """GitHub's heading slugs: lowercase, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", markdown, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_runbook_url_points_at_an_anchor_of_the_runbook() -> None:
    anchors = github_anchors((ROOT / RUNBOOK_URL).read_text())
    for alert in rules.alerts():
        assert alert.anchor in anchors, f"docs/runbook.md lacks a '## {alert.name}' section"


def test_every_alert_fires_in_one_unit_test_and_stays_silent_in_another() -> None:
    fires: set[str] = set()
    silent: set[str] = set()
    for path in TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for t in case.get("alert_rule_test", []):
                (fires if t.get("exp_alerts") else silent).add(t["alertname"])
    assert fires == set(CONTRACT)
    assert silent == set(CONTRACT)


def test_grafana_rules_carry_the_same_alerts() -> None:
    data = json.loads((ROOT / "alerts/grafana-alert-rules.json").read_text())
    got = {
        r["grafana_alert"]["title"]: (r["for"], r["labels"]["severity"], r["grafana_alert"]["data"][0]["model"]["expr"])
        for g in data["groups"]
        for r in g["rules"]
    }
    assert got == {a.name: (a.for_, a.severity, a.query) for a in rules.alerts()}
