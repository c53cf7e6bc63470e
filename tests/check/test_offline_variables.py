"""`check --against` judges a dashboard's query variables offline like its panel queries: the query Grafana
runs for `label_values(metric, label)`, `query_result(query)` and `metrics(regex)`; live, Prometheus resolves
them (a variable without values is a note on every query), so they are not queries of their own there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from exporter.check.inputs import file_queries
from exporter.check.variables import definition_query

TGI = Path(__file__).resolve().parents[1] / "fixtures" / "check_corpus" / "tgi-grafana-dashboard.json"


def report(*args: str) -> tuple[int, dict[str, Any]]:
    command = [sys.executable, "-m", "exporter", "check", "--output", "json", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, json.loads(done.stdout)


def variables_of(out: dict[str, Any]) -> list[tuple[str, str, str, list[str], list[str]]]:
    return [
        (r["location"], r["expr"], r["status"], r["reasons"], r["rules"])
        for r in out["results"]
        if r["location"].startswith("variable ")
    ]


def test_the_query_each_definition_runs() -> None:
    assert definition_query("label_values(vllm:gpu_cache_usage_perc, model_name)") == (
        "group by (model_name) (vllm:gpu_cache_usage_perc)"
    )
    assert definition_query('label_values(tgi_request_count{job="x"},container)') == (
        'group by (container) (tgi_request_count{job="x"})'
    )
    assert definition_query("label_values(model_name)") is None  # every series' label: nothing to judge
    assert definition_query("query_result(topk(3, vllm:num_requests_waiting))") == "topk(3, vllm:num_requests_waiting)"
    assert (
        definition_query(r"metrics(vllm:\w+_total)") == r'group by (__name__) ({__name__=~".*(?:vllm:\\w+_total).*"})'
    )
    assert definition_query("max(vllm:num_requests_running)") == "max(vllm:num_requests_running)"


def test_tgis_dashboard_variable_is_empty_before_tgi_writes_its_metric() -> None:
    """TGI's own dashboard (stored as published) lists its `service` variable from tgi_request_count, which
    TGI writes from 0.5.0 on: on 0.4.0 the variable has no values, so every panel filtering on it is empty."""
    rc, out = report("--against", "tgi==0.4.0", str(TGI))
    assert rc == 1
    assert variables_of(out) == [
        (
            "variable 'service'",
            "group by (container) (tgi_request_count)",
            "empty",
            ["tgi_request_count: tgi_request_count first appears in TGI 0.5.0: not written by TGI 0.4.0"],
            ["not-yet"],
        )
    ]
    rc, out = report("--against", "tgi==3.3.7", str(TGI))
    assert variables_of(out) == [("variable 'service'", "group by (container) (tgi_request_count)", "ok", [], [])]
    assert out["read"] == {"queries": 56, "files": 1, "judged": 56}
    # live, the same file has its 55 panel queries only: Prometheus resolves the variable itself
    assert len(file_queries(TGI)) == 55 and len(file_queries(TGI, with_variables=True)) == 56


def dashboard(tmp_path: Path, definitions: dict[str, str]) -> Path:
    variables = [
        {
            "name": name,
            "type": "query",
            "datasource": {"type": "prometheus", "uid": "prom"},
            "query": {"query": definition, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
            "definition": definition,
        }
        for name, definition in definitions.items()
    ]
    panel = {"title": "p", "targets": [{"refId": "A", "expr": 'sum(vllm:num_requests_running{model_name=~"$model"})'}]}
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"title": "d", "panels": [panel], "templating": {"list": variables}}, indent=2))
    return path


def test_a_renamed_metric_in_a_variable_is_empty_and_fixed_in_place(tmp_path: Path) -> None:
    path = dashboard(tmp_path, {"model": "label_values(vllm:gpu_cache_usage_perc, model_name)"})
    rc, out = report("--against", "vllm==0.12.0", str(path))
    assert rc == 1
    [variable] = [r for r in out["results"] if r["location"] == "variable 'model'"]
    assert (variable["status"], variable["rules"], variable["fix"]) == (
        "empty",
        ["renamed"],
        "label_values(vllm:kv_cache_usage_perc, model_name)",
    )
    command = [sys.executable, "-m", "exporter", "check", "--against", "vllm==0.12.0", "--write", str(path)]
    subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    written = json.loads(path.read_text())["templating"]["list"][0]
    assert (written["query"]["query"], written["definition"]) == (
        "label_values(vllm:kv_cache_usage_perc, model_name)",
    ) * 2
    assert report("--against", "vllm==0.12.0", str(path))[0] == 0


def test_metrics_and_query_result_variables(tmp_path: Path) -> None:
    path = dashboard(
        tmp_path,
        {
            "running": "metrics(vllm:num_requests_)",
            "gone": "metrics(vllm:gpu_cache_usage)",
            "kube": "metrics(kube_)",
            "top": "query_result(topk(3, vllm:num_requests_waiting))",
            "model": "label_values(model_name)",
        },
    )
    rc, out = report("--against", "vllm==0.12.0", str(path))
    gone = '{__name__=~".*(?:vllm:gpu_cache_usage).*"}'
    assert rc == 1
    assert variables_of(out) == [
        ("variable 'running'", 'group by (__name__) ({__name__=~".*(?:vllm:num_requests_).*"})', "ok", [], []),
        (
            "variable 'gone'",
            f"group by (__name__) ({gone})",
            "empty",
            [f"{gone}: vLLM 0.12.0 writes no name it matches (other releases wrote vllm:gpu_cache_usage_perc)"],
            [],
        ),
        (
            "variable 'kube'",
            'group by (__name__) ({__name__=~".*(?:kube_).*"})',
            "unjudged",
            ['{__name__=~".*(?:kube_).*"}: not judged: it matches no engine\'s name'],
            [],
        ),
        ("variable 'top'", "topk(3, vllm:num_requests_waiting)", "ok", [], []),
    ]
    # on a release that still wrote it, the same regex finds data
    assert variables_of(report("--against", "vllm==0.10.2", str(path))[1])[1][2] == "ok"
