"""The watchdog's pure parts, on the objects this project ships: its KEDA ScaledObject example and the
dashboard ConfigMap the Grafana sidecar loads (deploy/base/generated)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.config import ConfigError, parse
from exporter.exposition import render
from exporter.watchdog import model

ROOT = Path(__file__).resolve().parents[2]
SCALED_OBJECT = ROOT / "deploy/examples/keda-scaledobject.yaml"
DASHBOARDS = ROOT / "deploy/base/generated/dashboard-configmap.yaml"


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def test_the_prometheus_trigger_of_the_shipped_scaled_object() -> None:
    obj = load(SCALED_OBJECT)
    obj["metadata"].setdefault("namespace", "inference")
    (query,) = model.scaler_queries("ScaledObject")(obj) or ()
    trigger = next(t for t in obj["spec"]["triggers"] if t["type"] == "prometheus")
    assert query.kind == "ScaledObject"
    assert (query.namespace, query.name) == ("inference", "vllm-llama")
    assert query.location == f"trigger {trigger.get('name') or 0}"  # its only trigger
    assert query.expr == trigger["metadata"]["query"]


def test_a_scaled_job_without_prometheus_triggers_is_not_kept() -> None:
    obj = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledJob",
        "metadata": {"name": "batch", "namespace": "llm"},
        "spec": {"triggers": [{"type": "cpu", "metadata": {"value": "50"}}]},
    }
    assert model.scaler_queries("ScaledJob")(obj) is None


def test_every_dashboard_of_the_shipped_configmap_is_kept_whole() -> None:
    configmap = load(DASHBOARDS)
    configmap["metadata"]["namespace"] = "monitoring"
    kept = model.dashboards(configmap) or ()
    keys = sorted(k for k in configmap["data"] if k.endswith(".json"))
    assert [(d.kind, d.namespace, d.name, d.location, d.expr) for d in kept] == [
        ("Dashboard", "monitoring", configmap["metadata"]["name"], key, "") for key in keys
    ]
    # expanded at every run (variables need Prometheus); kept compact, the same dashboard
    assert [json.loads(d.dashboard or "") for d in kept] == [json.loads(configmap["data"][k]) for k in keys]


def test_a_broken_dashboard_key_leaves_the_others() -> None:
    configmap = load(DASHBOARDS)
    configmap["metadata"]["namespace"] = "monitoring"
    good = len(model.dashboards(copy.deepcopy(configmap)) or ())
    configmap["data"]["broken.json"] = '{"panels": ['
    configmap["data"]["list.json"] = "[1, 2]"
    configmap["data"]["notes.txt"] = "not a dashboard"
    assert len(model.dashboards(configmap) or ()) == good


@pytest.mark.parametrize(
    ("reason", "label"),
    [
        ("vllm:gpu_cache_usage_perc: never present in the last 1d (not scraped, or renamed)", "never_present"),
        ("vllm:x: disappeared: present in the last 1d but not now, last seen 5m ago", "disappeared"),
        ("vllm:x: label matcher model_name=\"a\" matches nothing; model_name has: 'tiny'", "label_mismatch"),
        ("vllm:x: no series has label 'pod', so pod=\"a\" matches nothing", "label_mismatch"),
        ("every selector returns series: the empty result comes from the query's operators", "operators"),
        ("something new", "unknown"),
    ],
)
def test_the_bounded_reason_label(reason: str, label: str) -> None:
    assert model.empty_reason([reason]) == label


@pytest.mark.parametrize(
    ("status", "message", "reason"),
    [
        (0, "cannot reach http://127.0.0.1:1: [Errno 111] Connection refused", "unreachable"),
        (401, "http://p/api/v1/query: HTTP 401", "unauthorized"),
        (403, "forbidden", "unauthorized"),
        (400, "parse error", "bad_query"),
        (503, "unavailable", "error"),
    ],
)
def test_error_reasons(status: int, message: str, reason: str) -> None:
    assert model.error_reason(status, message) == reason


def test_families_name_every_error_reason_and_drop_nothing() -> None:
    key = ("ScaledObject", "llm", "vllm", "trigger 0")
    verdicts = {key: model.Verdict(True, "never_present"), (*key[:3], "trigger 1"): model.Verdict(False)}
    text = render(model.families(verdicts, {"unauthorized": 2}, 1700000000.0, {"scaledjobs": False}))
    lines = text.splitlines()
    assert 'llm_query_empty{kind="ScaledObject",namespace="llm",name="vllm",location="trigger 0"} 1' in lines
    assert 'llm_query_empty{kind="ScaledObject",namespace="llm",name="vllm",location="trigger 1"} 0' in lines
    assert (
        'llm_query_empty_reason{kind="ScaledObject",namespace="llm",name="vllm",location="trigger 0",'
        'reason="never_present"} 1' in lines
    )
    assert 'llm_query_check_errors_total{reason="unauthorized"} 2' in lines
    assert 'llm_query_check_errors_total{reason="unreachable"} 0' in lines
    (last,) = [line for line in lines if line.startswith("llm_query_check_last_run_timestamp_seconds ")]
    assert float(last.split()[1]) == 1700000000.0
    assert 'llm_query_source_available{resource="scaledjobs"} 0' in lines


def test_config_defaults_off_and_names_every_bad_key() -> None:
    assert parse("").cluster.watchdog.enabled is False
    text = """
cluster:
  watchdog:
    enabled: true
    interval_seconds: 1
    timeout_seconds: 0
    colour: red
    prometheus:
      url: ftp://prometheus
      bearer_token_file: /var/run/secrets/prometheus/token
      basic_auth: {username: u}
      tls: {insecure_skip_verify: "yes"}
"""
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert sorted(info.value.errors) == sorted(
        [
            "cluster.watchdog.colour: unknown key (known: cluster, cluster_label, dashboard_label, enabled, "
            "interval_seconds, max_queries, prometheus, timeout_seconds)",
            "cluster.watchdog.prometheus.tls.insecure_skip_verify: expected bool, got str 'yes'",
        ]
    )
    text = text.replace("    colour: red\n", "").replace('tls: {insecure_skip_verify: "yes"}', "tls: {}")
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert sorted(info.value.errors) == [
        "cluster.watchdog.interval_seconds: must be in [10, 86400]",
        "cluster.watchdog.prometheus.basic_auth: username and password_file go together",
        "cluster.watchdog.prometheus.bearer_token_file: set either bearer_token_file or basic_auth, not both",
        "cluster.watchdog.prometheus.url: 'ftp://prometheus' is not an http(s) URL with a host",
        "cluster.watchdog.timeout_seconds: must be in (0, 300]",
    ]


def test_an_enabled_watchdog_needs_a_prometheus() -> None:
    with pytest.raises(ConfigError) as info:
        parse("cluster: {watchdog: {enabled: true}}")
    assert info.value.errors == ["cluster.watchdog.prometheus.url: required when the watchdog is enabled"]
    config = parse("cluster: {watchdog: {enabled: true, prometheus: {url: 'https://prom:9090'}}}")
    assert config.cluster.watchdog.prometheus.url == "https://prom:9090"


def test_panels_sharing_a_title_and_ref_id_get_their_own_series() -> None:
    dashboard = model.WatchedQuery(model.DASHBOARD, "m", "d", "d.json", "", "{}")
    found = [
        ("panel 'Waiting' query A", "sum(llm_requests_waiting)", 1),
        ("panel 'Waiting' query A", "max(llm_requests_waiting)", 2),
        ("panel 'Waiting' query A", "sum(llm_requests_waiting)", 3),
        ("panel '" + "x" * 200 + "' query A", "up", 4),
    ]
    expanded = model.expand(dashboard, found)
    assert [(q.location, q.expr, n) for q, n in expanded][:3] == [
        ("d.json panel 'Waiting' query A", "sum(llm_requests_waiting)", 1),
        ("d.json panel 'Waiting' query A #2", "max(llm_requests_waiting)", 2),
        ("d.json panel 'Waiting' query A #3", "sum(llm_requests_waiting)", 3),
    ]
    assert len(expanded[3][0].location) == model.MAX_LOCATION
    assert {q.key[:3] for q, _ in expanded} == {(model.DASHBOARD, "m", "d")}


def test_a_known_successor_is_one_info_series_and_a_long_fix_is_left_to_the_log() -> None:
    key = ("ScaledObject", "llm", "vllm", "trigger 0")
    renames = (("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"), ("vllm:x_seconds", "vllm:y_seconds"))
    fix = "avg(vllm:kv_cache_usage_perc) + avg(vllm:y_seconds)"
    long_key = (*key[:3], "trigger 1")
    verdicts = {
        key: model.Verdict(True, "renamed", renames, fix),
        long_key: model.Verdict(True, "renamed", renames[:1], "x" * (model.MAX_FIX + 1)),
        (*key[:3], "trigger 2"): model.Verdict(True, "label_mismatch"),  # no successor: no info series
        (*key[:3], "trigger 3"): model.Verdict(False),
    }
    lines = render(model.families(verdicts, {}, None, {})).splitlines()
    assert [x for x in lines if x.startswith("llm_query_successor_info{")] == [
        'llm_query_successor_info{kind="ScaledObject",namespace="llm",name="vllm",location="trigger 0",'
        'renamed="vllm:gpu_cache_usage_perc,vllm:x_seconds",successor="vllm:kv_cache_usage_perc,vllm:y_seconds",'
        f'fix="{fix}"}} 1',
        'llm_query_successor_info{kind="ScaledObject",namespace="llm",name="vllm",location="trigger 1",'
        'renamed="vllm:gpu_cache_usage_perc",successor="vllm:kv_cache_usage_perc",fix=""} 1',
    ]


def test_autoscaler_queries_come_before_dashboards() -> None:
    board = model.WatchedQuery(model.DASHBOARD, "a", "a", "a.json", "", "{}")
    job = model.WatchedQuery("ScaledJob", "z", "batch", "trigger 0", "sum(x)")
    scaled = model.WatchedQuery("ScaledObject", "z", "vllm", "trigger 0", "sum(x)")
    assert model.pages_first([board, job, scaled]) == [scaled, job, board]
