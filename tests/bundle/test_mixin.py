"""mixin/mixin.libsonnet, evaluated by the real jsonnet (go-jsonnet, tools/peers/jsonnet), gives what `render` gives:
its recording and alert groups are the rule file's groups, single-cluster and with `clusterLabel` set (then with
the dashboards of `render --cluster-label`); its `_config` selector and thresholds change the expressions."""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from alerts.thresholds import DEFAULT
from exporter.bundle import render
from tests.peers import peer

ROOT = render.ROOT


def _evaluate(config: str = "{}") -> dict[str, Any]:
    code = (
        f'local m = (import "mixin/mixin.libsonnet") + {{ _config+:: {config} }};'
        " { alerts: m.prometheusAlerts, rules: m.prometheusRules, dashboards: m.grafanaDashboards }"
    )
    done = subprocess.run([peer("jsonnet"), "-e", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _groups(mixin: dict[str, Any]) -> list[dict[str, Any]]:
    return [*mixin["rules"]["groups"], *mixin["alerts"]["groups"]]


def _rendered(out: Path, *args: str) -> dict[str, str]:
    assert render.run(render_args(out, *args)) == 0
    return {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()}


def render_args(out: Path, *args: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    render.add_arguments(parser)
    return parser.parse_args(["--out", str(out), *args])


def test_single_cluster_mixin_is_the_rule_file(tmp_path: Path) -> None:
    mixin = _evaluate()
    rule_file = yaml.safe_load((ROOT / "alerts/llm-exporter.rules.yaml").read_text(encoding="utf-8"))
    assert _groups(mixin) == rule_file["groups"]
    files = _rendered(tmp_path / "out")
    assert _groups(mixin) == yaml.safe_load(files["prometheusrule.yaml"])["spec"]["groups"]
    assert all("record" in r for g in mixin["rules"]["groups"] for r in g["rules"])
    assert all("alert" in r for g in mixin["alerts"]["groups"] for r in g["rules"])
    dashboard = json.loads((ROOT / "dashboards/overview.json").read_text(encoding="utf-8"))
    assert mixin["dashboards"] == {"llm-inference-overview.json": dashboard}


def test_cluster_label_mixin_is_render_cluster_label(tmp_path: Path) -> None:
    mixin = _evaluate('{ clusterLabel: "region" }')
    files = _rendered(tmp_path / "out", "--cluster-label", "region")
    assert _groups(mixin) == yaml.safe_load(files["llm-exporter.rules.yaml"])["groups"]
    dashboards = {name: json.loads(text) for name, text in files.items() if name.startswith("llm-inference-")}
    assert mixin["dashboards"] == dashboards
    assert "llm_mixin" not in json.dumps(mixin)


def _expr(mixin: dict[str, Any], alert: str) -> str:
    return str(next(r["expr"] for g in mixin["alerts"]["groups"] for r in g["rules"] if r.get("alert") == alert))


@pytest.mark.parametrize("selector", ['job="llm"', ""])
def test_selector_and_thresholds_are_configurable(selector: str) -> None:
    mixin = _evaluate(f"{{ selector: {json.dumps(selector)}, thresholds+: {{ LLMInterTokenLatencyP99High: 0.35 }} }}")
    expr = _expr(mixin, "LLMInterTokenLatencyP99High")
    inner = f"{{{selector}}}" if selector else ""
    assert expr == (
        "histogram_quantile(0.99, sum by (namespace, model, le) "
        f"(rate(llm_inter_token_latency_seconds_bucket{inner}[5m]))) > 0.35"
    )
    text = json.dumps(_groups(mixin))
    assert "llm_mixin" not in text and DEFAULT.selector not in text.replace('up{job=\\"llm-exporter\\"}', "")
    # a selector with other matchers keeps them: the SLO recording reads its bucket
    slo = mixin["rules"]["groups"][0]["rules"][0]["expr"]
    assert f'llm_time_to_first_token_seconds_bucket{{{selector + ", " if selector else ""}le="2.5"}}' in slo


def test_a_threshold_under_no_alert_name_is_an_error_naming_it() -> None:
    code = (
        '((import "mixin/mixin.libsonnet") + { _config+:: { thresholds: { LLMKVCacheNearlyFul: 0.9 } } })'
        ".prometheusAlerts"
    )
    done = subprocess.run([peer("jsonnet"), "-e", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "no alert compares with a threshold under the name(s) LLMKVCacheNearlyFul" in done.stderr


def test_thresholds_given_without_plus_keep_the_other_defaults() -> None:
    mixin = _evaluate("{ thresholds: { LLMKVCacheNearlyFull: 0.9 } }")
    assert _expr(mixin, "LLMKVCacheNearlyFull").endswith(" > 0.9")
    assert _expr(mixin, "LLMRequestQueueBacklog").endswith(" > 5")
