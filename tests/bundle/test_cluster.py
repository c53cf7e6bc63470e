"""The bundle over many clusters (`llm-exporter render --cluster-label NAME --out DIR`, the chart's clusterLabel):
every generated rule and panel query keeps the cluster label in every aggregation and join, every panel filters
on the cluster variable, promtool accepts the rules and proves two clusters' series are never summed or joined,
and without the label the files are the generated ones byte for byte."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.bundle import render
from exporter.check.inputs import BadFileError, file_queries
from exporter.promql import cluster as expressions
from exporter.promql.selectors import selectors, substitute
from exporter.promql.tokens import AGGREGATIONS
from tests.bundle.servers import PROMTOOL
from tests.deploy.helm import template
from tests.deploy.manifests import find
from tests.deploy.manifests import render as render_kustomization

ROOT = render.ROOT
LABEL = "cluster"
DATA = Path(__file__).parent / "data"
GENERATED = {
    "llm-exporter.rules.yaml": "alerts/llm-exporter.rules.yaml",
    "prometheusrule.yaml": "deploy/base/generated/prometheusrule.yaml",
    "grafana-alert-rules.json": "alerts/grafana-alert-rules.json",
}
DASHBOARD = "llm-inference-overview.json"
# an aggregation called with no clause before its body: the rewrite always puts `by (...)` right after the name
_BARE_AGGREGATION = re.compile(rf"\b({'|'.join(sorted(AGGREGATIONS))})\s*\(")
_CLAUSE = re.compile(r"\b(by|on|without|ignoring)\s*\(([^)]*)\)")


def llm_exporter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "render", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clustered")
    result = llm_exporter("--cluster-label", LABEL, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted([*GENERATED, DASHBOARD])
    return out


def rule_exprs(groups: list[dict[str, Any]]) -> list[str]:
    return [r["expr"] for g in groups for r in g["rules"]]


def grafana_exprs(provisioning: dict[str, Any]) -> list[str]:
    return [
        q["model"]["expr"]
        for g in provisioning["groups"]
        for r in g["rules"]
        for q in r["grafana_alert"]["data"]
        if "expr" in q["model"]
    ]


def panel_targets(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            out.extend(panel.get("targets", []))
            walk(panel.get("panels", []))

    walk(dashboard["panels"])
    for row in dashboard.get("rows", []):
        walk(row.get("panels", []))
    return out


def unclustered(expr: str) -> str:
    """`expr` without spaces and without the label wherever the rewrite may have put it."""
    compact = re.sub(r"\s+", "", expr)
    return (
        compact.replace(f",{LABEL})", ")")
        .replace(f"on({LABEL})", "on()")
        .replace(f"by({LABEL})", "")
        .replace("by()", "")
    )


def assert_keeps_label(expr: str) -> None:
    """Every by/on list names the label, no without/ignoring list does, and no aggregation lacks a clause."""
    assert not _BARE_AGGREGATION.search(expr), expr
    for clause, names in _CLAUSE.findall(expr):
        listed = [n.strip() for n in names.split(",") if n.strip()]
        if clause in ("by", "on"):
            assert LABEL in listed, f"{clause} ({names}) in {expr}"
        else:
            assert LABEL not in listed, f"{clause} ({names}) in {expr}"


def test_every_rule_keeps_the_label_and_promtool_accepts_it(rendered: Path) -> None:
    rules = yaml.safe_load((rendered / "llm-exporter.rules.yaml").read_text(encoding="utf-8"))["groups"]
    manifest = yaml.safe_load((rendered / "prometheusrule.yaml").read_text(encoding="utf-8"))["spec"]["groups"]
    grafana = json.loads((rendered / "grafana-alert-rules.json").read_text(encoding="utf-8"))
    exprs = rule_exprs(rules) + rule_exprs(manifest) + grafana_exprs(grafana)
    generated = yaml.safe_load((ROOT / GENERATED["llm-exporter.rules.yaml"]).read_text(encoding="utf-8"))["groups"]
    assert len(rule_exprs(rules)) == len(rule_exprs(generated)) > 40
    for expr in exprs:
        assert_keeps_label(expr)
        selectors(expr)  # still tokenizes as PromQL
    # the rewrite adds the label and nothing else: taken out again, each expression is the generated one
    for before, after in zip(rule_exprs(generated), rule_exprs(rules), strict=True):
        assert unclustered(after) == unclustered(before), after
    result = subprocess.run(
        [PROMTOOL, "check", "rules", str(rendered / "llm-exporter.rules.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rule_exprs(rules))} rules found" in result.stdout


def test_two_clusters_are_never_summed_or_joined(rendered: Path, tmp_path: Path) -> None:
    """promtool over series of clusters a and b with the same names: each cluster's own values, and the
    alerts fire for cluster a only, carrying cluster="a"."""
    shutil.copy(rendered / "llm-exporter.rules.yaml", tmp_path)
    shutil.copy(DATA / "multicluster.test.yaml", tmp_path)
    result = subprocess.run(
        [PROMTOOL, "test", "rules", "multicluster.test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_single_cluster_rules_fail_the_same_cases(tmp_path: Path) -> None:
    """The cases can fail: under the generated (single-cluster) rules they sum and join across clusters."""
    shutil.copy(ROOT / GENERATED["llm-exporter.rules.yaml"], tmp_path)
    shutil.copy(DATA / "multicluster.test.yaml", tmp_path)
    result = subprocess.run(
        [PROMTOOL, "test", "rules", "multicluster.test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    report = result.stdout + result.stderr
    assert 'got: {__name__="llm:workload_requests_waiting", namespace="demo", workload="vllm"} 1E+01' in report
    assert "found duplicate series for the match group" in report


def test_every_panel_filters_on_the_cluster_variable(rendered: Path) -> None:
    board = json.loads((rendered / DASHBOARD).read_text(encoding="utf-8"))
    targets = panel_targets(board)
    assert len(targets) == len(panel_targets(json.loads((ROOT / "dashboards/overview.json").read_text()))) > 50
    for target in targets:
        expr = target["expr"]
        assert target["query"] == expr
        assert_keeps_label(expr)
        for selector in selectors(substitute(expr)):
            assert any(m.label == LABEL and m.op == "=~" and m.value == "$cluster" for m in selector.matchers), (
                f"{selector} in {expr}"
            )
        if target["legendFormat"]:
            assert target["legendFormat"].startswith("{{cluster}} ")
    variables = board["templating"]["list"]
    assert [v["name"] for v in variables][:2] == ["datasource", "cluster"]
    assert variables[1]["query"] == f'label_values({{__name__=~"llm_engine_up|llm_node_gpus_allocatable"}}, {LABEL})'
    assert variables[1]["includeAll"] and variables[1]["multi"] and variables[1]["hide"] == 0
    for variable in variables[2:]:
        if variable["type"] == "query":
            assert variable["query"].startswith("label_values(") and 'cluster=~"$cluster"' in variable["query"]


def test_without_the_label_the_files_are_the_generated_ones(tmp_path: Path) -> None:
    result = llm_exporter("--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(GENERATED)
    for name, rel in GENERATED.items():
        assert (tmp_path / name).read_bytes() == (ROOT / rel).read_bytes()


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("sum by (namespace, model) (x)", "sum by (namespace, model, cluster) (x)"),
        ("sum(rate(x[5m]))", "sum by (cluster) (rate(x[5m]))"),
        ("sum (x) by (a)", "sum (x) by (a, cluster)"),
        ("max by () (x)", "max by (cluster) (x)"),
        ("sum without (pod) (x)", "sum without (pod) (x)"),
        (
            "a * on (namespace, pod) group_left (workload) b",
            "a * on (namespace, pod, cluster) group_left (workload) b",
        ),
        ("a and on (cluster, m) b", "a and on (cluster, m) b"),
        ("topk by (node) (1, x)", "topk by (node, cluster) (1, x)"),
        ('count_values("v", x)', 'count_values by (cluster) ("v", x)'),
        ("a / b > bool 0 unless c offset 10m", "a / b > bool 0 unless c offset 10m"),
        ('label_replace(x, "resource", "none", "", "")', 'label_replace(x, "resource", "none", "", "")'),
    ],
)
def test_clustered(expr: str, want: str) -> None:
    assert expressions.clustered(expr, LABEL) == want


def test_filtered() -> None:
    expr = 'sum by (le) (rate(x_bucket{a=~"$a"}[$__rate_interval])) / on () group_left () y + {job="j"} + z{}'
    assert expressions.filtered(expr, "k8s") == (
        'sum by (le, k8s) (rate(x_bucket{k8s=~"$cluster", a=~"$a"}[$__rate_interval]))'
        ' / on (k8s) group_left () y{k8s=~"$cluster"} + {k8s=~"$cluster", job="j"} + z{k8s=~"$cluster"}'
    )


@pytest.mark.parametrize("expr", ["sum without (cluster) (x)", "a * ignoring (cluster) b"])
def test_dropping_the_label_is_refused(expr: str) -> None:
    with pytest.raises(expressions.ClusterLabelError, match="merges the series of clusters"):
        expressions.clustered(expr, LABEL)


@pytest.mark.parametrize("value", ["", "1cluster", "__cluster", "clu-ster"])
def test_a_bad_label_is_a_usage_error(value: str, tmp_path: Path) -> None:
    result = llm_exporter("--cluster-label", value, "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "is not a label name" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_label_needs_out() -> None:
    result = llm_exporter("--cluster-label", LABEL)
    assert result.returncode == 2
    assert "--cluster-label needs --out DIR" in result.stderr


def test_the_charts_cluster_label(rendered: Path) -> None:
    """The chart's clusterLabel renders the same rules and dashboards as --cluster-label; unset, the generated."""

    def parts(objects: list[dict[str, Any]]) -> tuple[Any, Any]:
        rule = next(o for o in objects if o["kind"] == "PrometheusRule")
        board = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-dashboards"))
        return rule["spec"]["groups"], json.loads(board["data"][DASHBOARD])

    groups, board = parts(template(sets=(f"clusterLabel={LABEL}",)))
    assert groups == yaml.safe_load((rendered / "llm-exporter.rules.yaml").read_text(encoding="utf-8"))["groups"]
    assert board == json.loads((rendered / DASHBOARD).read_text(encoding="utf-8"))
    # with hosted runbook links too: the same rules as `render --cluster-label --runbook-url`
    url = "https://runbooks.example.com/llm-exporter.md"
    groups, _ = parts(template(sets=(f"clusterLabel={LABEL}", f"prometheusRule.runbookUrl={url}")))
    both = render.alert_files(ROOT, url, LABEL)["llm-exporter.rules.yaml"]
    assert groups == yaml.safe_load(both)["groups"]
    groups, board = parts(template())
    assert groups == yaml.safe_load((ROOT / GENERATED["llm-exporter.rules.yaml"]).read_text(encoding="utf-8"))["groups"]
    assert board == json.loads((ROOT / "dashboards/overview.json").read_text(encoding="utf-8"))


def test_the_kustomize_example_for_many_clusters(rendered: Path) -> None:
    """deploy/examples/multi-cluster: the rules and dashboards of `--cluster-label cluster`, and the label on
    every scraped series of both monitors."""
    example = ROOT / "deploy/examples/multi-cluster"
    assert (example / "generated/prometheusrule.yaml").read_bytes() == (rendered / "prometheusrule.yaml").read_bytes()
    objects = render_kustomization(example)
    rule = find(objects, "PrometheusRule", "llm-inference-exporter")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"  # still the overlay's
    assert rule["spec"]["groups"] == yaml.safe_load((rendered / "prometheusrule.yaml").read_text())["spec"]["groups"]
    board = find(objects, "ConfigMap", "llm-inference-exporter-dashboards")
    assert list(board["data"]) == [DASHBOARD]
    assert json.loads(board["data"][DASHBOARD]) == json.loads((rendered / DASHBOARD).read_text(encoding="utf-8"))
    relabel = [{"action": "replace", "replacement": "prod-eu", "targetLabel": LABEL}]
    assert find(objects, "ServiceMonitor", "llm-exporter-cluster")["spec"]["endpoints"][0]["relabelings"] == relabel
    node = find(objects, "PodMonitor", "llm-exporter-node")
    assert node["spec"]["podMetricsEndpoints"][0]["relabelings"] == relabel


def test_the_rewrite_holds_on_queries_written_elsewhere(tmp_path: Path) -> None:
    """The dashboards and autoscalers of tests/fixtures/check_corpus (written by other projects, stored as
    found): every query promtool accepts is still accepted rewritten, with the label in every by/on list."""
    corpus = ROOT / "tests/fixtures/check_corpus"
    exprs: list[str] = []
    for path in sorted(corpus.glob("*")):
        if path.name == "provenance.json":
            continue
        try:
            exprs.extend(q.expr for q in file_queries(path))
        except BadFileError:
            continue  # prometheus-adapter's templated sample is not YAML as stored
    assert len(exprs) > 100

    def accepted(expr: str) -> bool:
        rules = tmp_path / "rules.yaml"
        rules.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [{"record": "r", "expr": expr}]}]}))
        result = subprocess.run(
            [PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True, timeout=30, check=False
        )
        return result.returncode == 0

    valid = [e for e in dict.fromkeys(exprs) if accepted(e)]
    assert len(valid) > 50
    for expr in valid:
        rewritten = expressions.clustered(expr, LABEL)
        assert accepted(rewritten), (expr, rewritten)
        for clause, names in _CLAUSE.findall(rewritten):
            if clause in ("by", "on"):
                assert LABEL in [n.strip() for n in names.split(",")], (clause, names, rewritten)
