"""`check` reads the containers dashboards are kept in (tests/fixtures/check_formats, stored as published, see
PROVENANCE.md): grafana-operator's GrafanaDashboard (inline, gzipped, from a ConfigMap), Grafana's v2 resource,
Perses dashboards and PersesDashboard (v1alpha1, v1alpha2), HPA metric names; a query on Loki (a panel, a
Mixed panel's target, a Perses Loki query) is listed as skipped, never parsed."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.check.inputs import BadFileError, file_queries
from exporter.promql.parse import parse
from exporter.promql.selectors import metric_names

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "check_formats"
AUDIT = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus"
ADMIN = FORMATS / "maas-platform-admin-grafanadashboard.yaml"
ITL = "vllm:inter_token_latency_seconds_bucket first appears in vLLM 0.10.2: not written by vLLM 0.9.0"
KV = "vllm:kv_cache_usage_perc first appears in vLLM 0.9.2: not written by vLLM 0.9.0"


def check(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "exporter", "check", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def report(*args: str) -> dict[str, Any]:
    done = check("--output", "json", *args)
    out: dict[str, Any] = json.loads(done.stdout)
    out["rc"] = done.returncode
    return out


def test_a_grafanadashboard_passes_on_the_release_it_was_written_for() -> None:
    out = report("--against", "vllm==0.10.2", str(ADMIN))
    assert (out["rc"], out["errors"], out["read"]) == (0, [], {"queries": 74, "files": 1, "judged": 33})
    assert out["counts"] == {"ok": 33, "empty": 0, "allowed": 0, "error": 0, "warning": 0, "unjudged": 41}
    assert {r["file"] for r in out["results"]} == {f"{ADMIN} GrafanaDashboard platform-admin-dashboard"}
    # its three query variables judged as the queries Grafana runs for them (the vLLM one is data)
    assert [(r["location"], r["expr"], r["status"]) for r in out["results"] if r["location"].startswith("var")] == [
        ("variable 'maas_namespace'", 'group by (namespace) (kube_pod_info{pod=~"maas-api.*"})', "unjudged"),
        ("variable 'model'", "group by (model_name) (vllm:num_requests_running)", "ok"),
        ("variable 'tenant'", "group by (tenant_name) (maas_api_http_requests_total)", "unjudged"),
    ]


def test_a_grafanadashboard_fails_on_a_release_before_its_metrics() -> None:
    out = report("--against", "vllm==0.9.0", str(ADMIN))
    empty = [(r["location"], r["reasons"]) for r in out["results"] if r["status"] == "empty"]
    assert out["rc"] == 1
    assert empty == [
        ("panel '💾 GPU Cache Usage' query A", [f"vllm:kv_cache_usage_perc: {KV}"]),
        *[
            (f"panel '⚡ Inter-Token Latency (ITL)' query {ref}", [f"vllm:inter_token_latency_seconds_bucket: {ITL}"])
            for ref in "ABC"
        ],
    ]


def test_keywords_are_case_insensitive_as_prometheus_reads_them() -> None:
    # the GrafanaDashboard above writes `… OR vector(0)`; Prometheus' lexer lowercases keywords
    expr = 'sum(rate(istio_requests_total{response_code="401"}[5m])) OR vector(0)'
    assert parse(expr) == parse(expr.replace(" OR ", " or "))
    assert metric_names("SUM BY (pod) (x) OR ON (pod) y") == {"x", "y"}


def test_gzipped_and_configmap_dashboards_of_the_operator_are_read(tmp_path: Path) -> None:
    gzipped = yaml.safe_load_all((FORMATS / "grafana-operator-gzip-json.yaml").read_text())
    assert file_queries(FORMATS / "grafana-operator-gzip-json.yaml") == []  # read: the example has no panels
    assert file_queries(FORMATS / "grafana-operator-configmap.yaml") == []
    # the same containers with a panel: the ConfigMap is read once, as the GrafanaDashboard that refers to it
    docs = list(yaml.safe_load_all((FORMATS / "grafana-operator-configmap.yaml").read_text()))
    dashboard = json.loads(docs[1]["data"]["json"])
    dashboard["panels"] = [{"title": "q", "targets": [{"refId": "A", "expr": "vllm:num_requests_running"}]}]
    docs[1]["data"]["json"] = json.dumps(dashboard)
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump_all(docs))
    queries = file_queries(tmp_path / "cm.yaml")
    assert [(q.source, q.where, q.expr) for q in queries] == [
        (
            f"{tmp_path / 'cm.yaml'} document 3 GrafanaDashboard grafanadashboard-from-configmap "
            "(ConfigMap dashboard-definition)",
            "panel 'q' query A",
            "vllm:num_requests_running",
        )
    ]
    (tmp_path / "alone.yaml").write_text(yaml.safe_dump(docs[2]))
    with pytest.raises(BadFileError) as raised:
        file_queries(tmp_path / "alone.yaml")
    assert str(raised.value) == (
        f"{tmp_path / 'alone.yaml'}: GrafanaDashboard grafanadashboard-from-configmap: its dashboard is key 'json' "
        "of ConfigMap 'dashboard-definition', which is not in this file: check the file that holds the ConfigMap"
    )
    # the gzipped example inflated, given a panel on a name vLLM removed in 0.8.0, packed again
    operator = list(gzipped)[1]
    inner = json.loads(gzip.decompress(base64.b64decode(operator["spec"]["gzipJson"])))
    inner["panels"] = [{"title": "s", "targets": [{"refId": "A", "expr": "vllm:num_requests_swapped"}]}]
    operator["spec"]["gzipJson"] = base64.b64encode(gzip.compress(json.dumps(inner).encode())).decode()
    (tmp_path / "gz.yaml").write_text(yaml.safe_dump(operator))
    assert [q.expr for q in file_queries(tmp_path / "gz.yaml")] == ["vllm:num_requests_swapped"]
    assert check("--against", "vllm==0.10.2", str(tmp_path / "gz.yaml")).returncode == 1
    operator["spec"]["gzipJson"] = "not base64!"
    (tmp_path / "gz.yaml").write_text(yaml.safe_dump(operator))
    with pytest.raises(BadFileError, match=r"GrafanaDashboard grafanadashboard-gzipped: spec\.gzipJson is not base64"):
        file_queries(tmp_path / "gz.yaml")


def test_a_grafanadashboard_fetched_by_the_operator_is_named_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "url.yaml"
    path.write_text(
        "apiVersion: grafana.integreatly.org/v1beta1\nkind: GrafanaDashboard\nmetadata: {name: d}\n"
        "spec:\n  url: https://example.com/d.json\n"
    )
    with pytest.raises(BadFileError) as raised:
        file_queries(path)
    assert str(raised.value) == (
        f"{path}: GrafanaDashboard d: the operator fetches its dashboard (spec.url): download that dashboard and "
        "check it"
    )


def v2_query(expr: str, group: str = "prometheus") -> dict[str, Any]:
    """A PanelQuery as Grafana 13 exports it (v2beta1: the plugin in `group`, the source in `datasource.name`)."""
    query = {"kind": "DataQuery", "group": group, "version": "v0", "datasource": {"name": "ds"}, "spec": {"expr": expr}}
    return {"kind": "PanelQuery", "spec": {"refId": "A", "hidden": False, "query": query}}


def test_a_grafana_v2_dashboard_is_read(tmp_path: Path) -> None:
    # the operator's published v2 example, its panel given queries in Grafana's documented v2beta1 shape
    manifest = yaml.safe_load((FORMATS / "grafana-operator-dashboard-v2-manifest.yaml").read_text())
    resource = manifest["spec"]["template"]
    assert file_queries_of(tmp_path, resource) == []
    data = resource["spec"]["elements"]["panel-1"]["spec"]["data"]["spec"]
    data["queries"] = [v2_query("vllm:time_per_output_token_seconds_bucket"), v2_query('{app="x"} |= "err"', "loki")]
    resource["spec"]["variables"] = [
        {"kind": "CustomVariable", "spec": {"name": "q", "query": "0.5,0.9", "current": {"value": "0.9"}}}
    ]
    data["queries"][0]["spec"]["query"]["spec"]["expr"] = "histogram_quantile($q, vllm:e2e_request_latency_seconds)"
    found = file_queries_of(tmp_path, resource)
    assert [(q.where, q.expr, q.datasource) for q in found] == [
        ("panel 'Example Panel' query A", "histogram_quantile(0.9, vllm:e2e_request_latency_seconds)", ""),
        ("panel 'Example Panel' query A", '{app="x"} |= "err"', "loki"),
    ]
    # v2alpha1: the plugin is the query's kind, the source the PanelQuery's
    resource["apiVersion"] = "dashboard.grafana.app/v2alpha1"
    data["queries"] = [
        {
            "kind": "PanelQuery",
            "spec": {
                "refId": "B",
                "datasource": {"type": "loki", "uid": "l"},
                "query": {"kind": "loki", "spec": {"expr": 'rate({a="b"}[1m])'}},
            },
        }
    ]
    assert [(q.where, q.datasource) for q in file_queries_of(tmp_path, resource)] == [
        ("panel 'Example Panel' query B", "loki")
    ]
    # the manifest itself is read as the dashboard it templates
    assert [q.source for q in file_queries_of(tmp_path, {**manifest, "spec": {"template": resource}})] == [
        f"{tmp_path / 'd.yaml'} GrafanaManifest my-dashboard"
    ]


def file_queries_of(tmp_path: Path, doc: dict[str, Any]) -> list[Any]:
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(doc))
    return file_queries(tmp_path / "d.yaml")


@pytest.mark.parametrize("sample", ["perses-operator-v1alpha1-sample.yaml", "perses-operator-v1alpha2-sample.yaml"])
def test_persesdashboards_of_both_versions_are_read_alike(sample: str) -> None:
    queries = file_queries(FORMATS / sample)
    assert len(queries) == 20
    assert queries[0].source == f"{FORMATS / sample} PersesDashboard perses-dashboard-sample"
    assert (queries[0].where, queries[0].expr) == ("panel 'Default Time Series Panel' query 1", "up")
    assert next(q.expr for q in queries if "caddy" in q.expr) == "rate(caddy_http_response_duration_seconds_sum[1m])"


def test_a_perses_dashboard_with_loki_queries_lists_them_as_skipped() -> None:
    path = FORMATS / "maas-usage-logs-persesdashboard.yaml"
    done = check("--against", "vllm==0.10.2", str(path))
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert len([line for line in lines if line.startswith("other ")]) == 8
    assert lines[0] == (
        f"other {path} document 1 PersesDashboard dashboard-5-maas-usage-logs: panel 'Total tokens' query 1: "
        "runs on LokiTimeSeriesQuery, not PromQL: not checked"
    )
    assert lines[-1] == (
        "0 queries in 1 files: 0 ok, 0 empty, 0 errors, 0 empty as expected on vLLM 0.10.2; "
        "8 skipped (8 LokiTimeSeriesQuery)"
    )


def test_a_perses_dashboard_of_prometheus_queries_is_judged() -> None:
    out = report("--against", "vllm==0.10.2", str(FORMATS / "maas-usage-persesdashboard.yaml"))
    assert (out["rc"], out["read"]) == (0, {"queries": 12, "files": 1, "judged": 5})  # 3 variables: not vLLM's


LOKI_LOGS = FORMATS / "loki-logs-dashboard.json"


def test_a_dashboard_with_loki_panels_passes_and_lists_them() -> None:
    done = check("--against", "vllm==0.10.2", str(LOKI_LOGS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"other {LOKI_LOGS}: panel 'Log Rate' query A: runs on loki, not PromQL: not checked",
        f"other {LOKI_LOGS}: panel 'Logs' query A: runs on loki, not PromQL: not checked",
        "11 queries in 1 files: 0 ok, 0 empty, 0 errors, 0 empty as expected, 11 not judged on vLLM 0.10.2; "
        "2 skipped (2 loki)",  # 3 of them its Prometheus variables (loki_build_info, kube_pod_container_info)
    ]
    out = report("--against", "vllm==0.10.2", str(LOKI_LOGS))
    assert out["skipped"][0] == {
        "file": str(LOKI_LOGS),
        "location": "panel 'Log Rate' query A",
        "expr": 'sum(rate({cluster="$cluster", namespace="$namespace", container=~"$container" } |logfmt| '
        'level=~"$level" |= "$filter" | __error__="" [$__auto])) by (level)',
        "datasource": "loki",
    }


def test_a_dashboard_with_loki_panels_still_fails_on_its_prometheus_queries(tmp_path: Path) -> None:
    dashboard = json.loads(LOKI_LOGS.read_text())
    goroutines = dashboard["panels"][0]["targets"][0]
    goroutines["expr"] = "sum(vllm:gpu_cache_usage_perc)"  # a vLLM name removed in 0.12.0
    (tmp_path / "d.json").write_text(json.dumps(dashboard))
    done = check("--against", "vllm==0.12.0", str(tmp_path / "d.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == (
        "11 queries in 1 files: 0 ok, 1 empty, 0 errors, 0 empty as expected, 10 not judged on vLLM 0.12.0; "
        "2 skipped (2 loki)"
    )


def mixed(*targets: dict[str, Any]) -> dict[str, Any]:
    return {
        "panels": [{"title": "m", "datasource": {"type": "datasource", "uid": "-- Mixed --"}, "targets": list(targets)}]
    }


def test_a_mixed_panel_skips_its_loki_target_and_checks_its_prometheus_one(tmp_path: Path) -> None:
    path = tmp_path / "mixed.json"
    path.write_text(
        json.dumps(
            mixed(
                {"refId": "A", "datasource": {"type": "loki", "uid": "l"}, "expr": '{app="vllm"} |= "error"'},
                {"refId": "B", "datasource": {"type": "prometheus", "uid": "p"}, "expr": "vllm:num_requests_waiting"},
                {"refId": "C", "datasource": "Loki", "expr": 'count_over_time({app="vllm"}[1m])'},
                {"refId": "D", "expr": "vllm:num_requests_running"},  # the default source
            )
        )
    )
    assert [(q.where, q.datasource) for q in file_queries(path)] == [
        ("panel 'm' query A", "loki"),
        ("panel 'm' query B", ""),
        ("panel 'm' query C", "loki"),
        ("panel 'm' query D", ""),
    ]
    done = check("--against", "vllm==0.10.2", str(path))
    assert (done.returncode, done.stdout.splitlines()[-1]) == (
        0,
        "2 queries in 1 files: 2 ok, 0 empty, 0 errors, 0 empty as expected on vLLM 0.10.2; 2 skipped (2 loki)",
    )
    path.write_text(
        json.dumps(mixed({"refId": "B", "datasource": {"type": "prometheus"}, "expr": "vllm:num_requests_swapped"}))
    )
    assert check("--against", "vllm==0.10.2", str(path)).returncode == 1


def test_an_hpa_on_a_managed_prometheus_name_is_judged_as_that_series(tmp_path: Path) -> None:
    path = AUDIT / "gke-lws-vllm-hpa" / "vllm-hpa.yaml"
    [query] = file_queries(path)
    assert (query.where, query.expr, query.kind, query.datasource) == (
        "HorizontalPodAutoscaler lws-hpa metric 0 (Pods prometheus.googleapis.com|vllm:num_requests_waiting|gauge)",
        "vllm:num_requests_waiting",
        "hpa",
        "",
    )
    assert check("--against", "vllm==0.10.2", str(path)).returncode == 0
    renamed = path.read_text().replace("vllm:num_requests_waiting", "vllm:num_requests_swapped")  # gone in 0.8.0
    (tmp_path / "hpa.yaml").write_text(renamed)
    assert check("--against", "vllm==0.10.2", str(tmp_path / "hpa.yaml")).returncode == 1


def test_an_hpa_on_an_adapter_name_is_skipped_and_its_selector_kept(tmp_path: Path) -> None:
    path = tmp_path / "hpa.yaml"
    path.write_text(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec:\n  metrics:\n"
        "  - type: Resource\n    resource: {name: cpu}\n"
        "  - type: External\n    external:\n      metric:\n        name: vllm_num_requests_waiting\n"
        "  - type: Object\n    object:\n      metric:\n"
        "        name: prometheus.googleapis.com|vllm:num_requests_running|gauge\n"
        "        selector: {matchLabels: {metric.labels.model_name: m, resource.labels.namespace: ns}}\n"
    )
    assert [(q.expr, q.datasource) for q in file_queries(path)] == [
        ("vllm_num_requests_waiting", "metrics-adapter"),
        ('vllm:num_requests_running{model_name="m",namespace="ns"}', ""),
    ]
    done = check("--against", "vllm==0.10.2", str(path))
    assert done.stdout.splitlines()[0] == (
        f"other {path}: HorizontalPodAutoscaler h metric 1 (External vllm_num_requests_waiting): a metrics adapter's "
        "name, not a Prometheus series: check the adapter's rules"
    )
    assert done.returncode == 0


def test_the_stored_files_are_as_published() -> None:
    text = (FORMATS / "PROVENANCE.md").read_text()
    pairs = [line.split() for line in text.split("SHA-256:")[1].splitlines() if "  " in line]
    sums = {name: digest for digest, name in pairs}
    stored = sorted(p.name for p in FORMATS.iterdir() if p.name != "PROVENANCE.md")
    assert sorted(sums) == stored
    for name, digest in sums.items():
        assert hashlib.sha256((FORMATS / name).read_bytes()).hexdigest() == digest, name


KEDA = Path(__file__).resolve().parents[1] / "fixtures" / "check_corpus" / "production-stack-keda-scaled-object.yaml"


def test_a_helm_templated_scaledobject_is_named_with_the_command_that_renders_it(tmp_path: Path) -> None:
    # the published ScaledObject as a chart would template it: a function call the old pattern did not know
    templated = KEDA.read_text().replace("name: vllm-scaledobject", "name: {{ lower .Values.name }}-scaler")
    (tmp_path / "scaledobject.yaml").write_text(templated)
    done = check("--against", "vllm==0.10.2", str(tmp_path / "scaledobject.yaml"))
    assert done.returncode == 2
    assert done.stdout.splitlines()[0] == (
        f"ERROR {tmp_path / 'scaledobject.yaml'}: an unrendered Helm template (line 6: name: {{{{ lower "
        ".Values.name }}-scaler), not YAML; render it first: `helm template <release> <chart> | llm-exporter "
        "check [--against …|--prometheus …] -`"
    )


def test_a_rendered_chart_on_standard_input_passes_or_fails_as_its_file_would() -> None:
    command = [sys.executable, "-m", "exporter", "check", "--against", "vllm==0.10.2", "-"]
    rendered = KEDA.read_text()
    done = subprocess.run(command, input=rendered, capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (
        0,
        "1 queries in 1 files: 1 ok, 0 empty, 0 errors, 0 empty as expected on vLLM 0.10.2\n",
    )
    stale = rendered.replace("vllm:num_requests_waiting", "vllm:num_requests_swapped")
    done = subprocess.run(command, input=stale, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert done.stdout.startswith("EMPTY -: ScaledObject vllm-scaledobject trigger 0\n")
