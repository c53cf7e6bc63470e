"""The committed bundle is exactly what the sources render (run with UPDATE_GOLDEN=1 to regenerate)."""

from __future__ import annotations

import argparse
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from exporter.bundle import render
from tests import golden

EXPECTED = {
    "dashboards/overview.json",
    "alerts/llm-exporter.rules.yaml",
    "alerts/grafana-alert-rules.json",
    "alerts/vllm-compat.rules.yaml",
    "deploy/base/generated/prometheusrule.yaml",
    "deploy/base/generated/dashboard-configmap.yaml",
    "charts/llm-inference-exporter/files/llm-exporter.rules.yaml",
    "charts/llm-inference-exporter/files/dashboards/llm-inference-overview.json",
    "charts/llm-inference-exporter/files/rbac-rules.yaml",
    # the same rules and dashboards for many clusters (tests/bundle/test_cluster.py)
    "charts/llm-inference-exporter/files/clustered/llm-exporter.rules.yaml",
    "charts/llm-inference-exporter/files/clustered/dashboards/llm-inference-overview.json",
    "deploy/examples/multi-cluster/generated/prometheusrule.yaml",
    "deploy/examples/multi-cluster/generated/dashboard-configmap.yaml",
}


def test_committed_bundle_matches_its_sources() -> None:
    for rel, text in render.outputs().items():
        golden.check(render.ROOT / rel, text)  # `python -m exporter.bundle` regenerates them too
    assert render.drifted() == []


def test_rendering_is_byte_identical_and_complete() -> None:
    first, second = render.outputs(), render.outputs()
    assert first == second
    assert set(first) == EXPECTED


def test_check_lists_drifted_and_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = render.outputs()
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "alerts/llm-exporter.rules.yaml").write_text(files["alerts/llm-exporter.rules.yaml"] + "# edit\n")
    (tmp_path / "dashboards/overview.json").unlink()
    assert render.drifted(tmp_path, render=lambda _root: files) == [
        "dashboards/overview.json",
        "alerts/llm-exporter.rules.yaml",
    ]
    code = render.run(argparse.Namespace(check=True, root=render.ROOT))
    assert (code, capsys.readouterr().out) == (0, "bundle up to date\n")


def test_manifests_wrap_the_rule_file_and_the_dashboard() -> None:
    files = render.outputs()
    rule = yaml.safe_load(files["deploy/base/generated/prometheusrule.yaml"])
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["spec"] == yaml.safe_load(files["alerts/llm-exporter.rules.yaml"])
    configmap = yaml.safe_load(files["deploy/base/generated/dashboard-configmap.yaml"])
    assert configmap["kind"] == "ConfigMap"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["data"] == {"llm-inference-overview.json": files["dashboards/overview.json"]}


def test_manifests_validate_against_the_kubernetes_schema() -> None:
    files = render.outputs()
    configmap = yaml.safe_load(files["deploy/base/generated/dashboard-configmap.yaml"])
    kubernetes_validate.validate(configmap, "1.30", strict=True)
