"""`llm-exporter check` against a real Prometheus scraping a loopback target whose series we control."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from exporter.check import cli as check
from exporter.check import evaluate
from exporter.check.inputs import Query, file_queries
from exporter.sources.prometheus import HttpPrometheus, PrometheusError
from tests.bundle.servers import Served, prometheus, query, static_job, wait_for

WAITING = 'llm_requests_waiting{namespace="demo",pod="vllm-0",engine="vllm",model="m",dp_rank="0"} 3\n'
BODY = WAITING + 'vllm:kv_cache_usage_perc{model_name="m"} 0.5\n'


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state = {"body": BODY + "llm_gone_ratio 1\n"}
    target = Served(lambda path: (200, state["body"]))
    try:
        with prometheus(tmp_path_factory.mktemp("prom"), [static_job("target", [target.url])]) as url:
            wait_for(lambda: bool(query(url, "llm_gone_ratio")), 30, "the first scrape")
            state["body"] = BODY  # llm_gone_ratio disappears: a stale marker on the next scrape
            wait_for(lambda: not query(url, "llm_gone_ratio"), 30, "llm_gone_ratio to go stale")
            yield url
    finally:
        target.close()


def dashboard(*exprs: str) -> dict[str, object]:
    return {
        "uid": "t",
        "templating": {"list": [{"name": "namespace"}]},
        "panels": [{"title": f"p{i}", "targets": [{"refId": "A", "expr": e}]} for i, e in enumerate(exprs)],
    }


def result(prom: str, expr: str, alert: bool = False) -> evaluate.Result:
    return evaluate.Checker(HttpPrometheus(prom)).check(Query("f", "w", expr, alert=alert))


@pytest.mark.parametrize(
    ("expr", "status", "reasons"),
    [
        ('sum(llm_requests_waiting{namespace=~".*"})', "ok", []),
        (
            "vllm:gpu_cache_usage_perc",
            "empty",
            [
                "vllm:gpu_cache_usage_perc: never present in the last 7d: vllm:gpu_cache_usage_perc was removed "
                "in vLLM 0.12.0 (hidden behind --show-hidden-metrics-for-version from 0.11.0); its successor is "
                "vllm:kv_cache_usage_perc (stable name llm_kv_cache_usage_ratio); the running vLLM is 0.12.0 to 0.34.0 "
                "(inferred from its series)"
            ],
        ),
        (
            'sum(llm_requests_waiting{namespace="prod", model="m"})',
            "empty",
            ["llm_requests_waiting: label matcher namespace=\"prod\" matches nothing; namespace has: 'demo'"],
        ),
        (
            'llm_requests_waiting{cluster="eu"}',
            "empty",
            ["llm_requests_waiting: no series has label 'cluster', so cluster=\"eu\" matches nothing"],
        ),
        (
            'llm_requests_waiting{namespace="demo", model="x"}',
            "empty",
            ["llm_requests_waiting: label matcher model=\"x\" matches nothing; model has: 'm'"],
        ),
        (
            "llm_requests_waiting > 100",
            "empty",
            [
                "every selector returns series: the empty result comes from the query's operators (a join, a "
                "filter or comparison, or a rate over fewer than two samples)"
            ],
        ),
        (
            "sum(llm_pending_pod_gpus_requested)",
            "allowed",
            [
                "(sparse: absent while healthy) llm_pending_pod_gpus_requested: never present in the last 7d (not "
                "scraped, or renamed)"
            ],
        ),
        ("llm_nothing_here_total # llm-exporter: allow-empty", "allowed", None),
        ("sum(llm_requests_waiting", "error", None),
    ],
)
def test_diagnosis(prom: str, expr: str, status: str, reasons: list[str] | None) -> None:
    got = result(prom, expr)
    assert got.status == status, got.reasons
    if reasons is not None:
        assert got.reasons == reasons


def test_disappeared_metric_is_told_apart_from_one_never_present(prom: str) -> None:
    got = result(prom, "max(llm_gone_ratio)")
    assert got.status == "empty"
    assert len(got.reasons) == 1
    assert re.fullmatch(
        r"llm_gone_ratio: disappeared: present in the last 7d but not now(, last seen \d+s ago)?", got.reasons[0]
    ), got.reasons


def test_alert_rules_are_checked_by_their_selectors(prom: str) -> None:
    assert result(prom, "llm_requests_waiting > 100", alert=True).status == "ok"  # not firing is not empty
    renamed = result(prom, "vllm:gpu_cache_usage_perc > 0.9", alert=True)
    assert renamed.status == "empty"
    assert renamed.reasons[0].startswith("vllm:gpu_cache_usage_perc: never present")


def run_check(capsys: pytest.CaptureFixture[str], prom: str, files: list[Path], *extra: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    check.add_arguments(parser)
    capsys.readouterr()
    code = check.run(parser.parse_args(["--prometheus", prom, *map(str, files), *extra]))
    return code, capsys.readouterr().out


def test_cli_flags_a_scaledobject_on_a_renamed_metric_and_exits_1(
    prom: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scaled = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "vllm"},
        "spec": {
            "triggers": [
                {"type": "cpu", "metadata": {"value": "50"}},
                {"type": "prometheus", "metadata": {"query": "sum(vllm:num_requests_waiting)", "threshold": "5"}},
            ]
        },
    }
    rules = {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "llm_requests_waiting > 100"}]}]}
    (tmp_path / "keda.yaml").write_text(yaml.safe_dump(scaled))
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    (tmp_path / "dash.json").write_text(json.dumps(dashboard('sum(llm_requests_waiting{namespace=~"$namespace"})')))
    code, out = run_check(capsys, prom, [tmp_path])
    assert code == 1
    assert out.splitlines() == [
        f"EMPTY {tmp_path / 'keda.yaml'}: ScaledObject vllm trigger 1",
        "      sum(vllm:num_requests_waiting)",
        "      - vllm:num_requests_waiting: never present in the last 7d: vllm:num_requests_waiting is exposed by "
        "every vLLM release from 0.5.0 on: not scraped, or relabelled; its stable name is llm_requests_waiting; "
        "the running vLLM is 0.12.0 to 0.34.0 (inferred from its series)",
        "3 queries in 3 files: 2 ok, 1 empty, 0 errors, 0 empty as expected",
    ]


def test_cli_passes_when_every_query_has_data(prom: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "dash.json").write_text(json.dumps(dashboard('llm_requests_waiting{namespace=~"$namespace"}')))
    code, out = run_check(capsys, prom, [tmp_path / "dash.json"], "--var", "namespace=demo")
    assert (code, out) == (0, "1 queries in 1 files: 1 ok, 0 empty, 0 errors, 0 empty as expected\n")


def test_cli_bad_input_exits_2(prom: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.yaml").write_text("groups: [\n")
    assert run_check(capsys, prom, [tmp_path / "bad.yaml"])[0] == 2
    assert run_check(capsys, "http://127.0.0.1:9", [tmp_path / "bad.yaml"])[0] == 2


def test_unreachable_prometheus_is_a_clear_error() -> None:
    with pytest.raises(PrometheusError, match=re.escape("cannot reach http://127.0.0.1:9")):
        HttpPrometheus("http://127.0.0.1:9", timeout=2).query("1")


def test_queries_come_from_prometheusrule_configmap_and_dashboard_rows(tmp_path: Path) -> None:
    rule = {
        "kind": "PrometheusRule",
        "spec": {
            "groups": [{"name": "g", "rules": [{"record": "r", "expr": "sum(x)"}, {"alert": "A", "expr": "y > 1"}]}]
        },
    }
    board = {
        "templating": {"list": [{"name": "node"}]},
        "rows": [{"panels": [{"title": "old", "targets": [{"refId": "B", "expr": 'z{node=~"$node"}'}]}]}],
        "panels": [
            {
                "type": "row",
                "panels": [
                    {
                        "title": "in row",
                        "targets": [
                            {"refId": "A", "expr": "rate(w[$__rate_interval])"},
                            {"refId": "C", "expr": "hidden", "hide": True},
                        ],
                    }
                ],
            }
        ],
    }
    configmap = {"kind": "ConfigMap", "data": {"d.json": json.dumps(board)}}
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump_all([rule, configmap]))
    assert [(q.where, q.expr, q.alert) for q in file_queries(path)] == [
        ("recording rule r", "sum(x)", False),
        ("alert A", "y > 1", True),
        ("panel 'in row' query A", "rate(w[5m])", False),
        ("panel 'old' query B", 'z{node=~".*"}', False),
    ]
