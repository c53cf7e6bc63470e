"""The watchdog as shipped, with real peers: `llm-exporter serve --role cluster` reads KEDA ScaledObjects and
ScaledJobs (the published KEDA CRDs, tests/fixtures/crds) and a Grafana-sidecar dashboard ConfigMap from a real
kube-apiserver (tests/kubecluster.py), checks their queries against a real Prometheus 3 that scrapes a served
vLLM body, and Prometheus evaluates the bundle's rules and sends to a real Alertmanager whose webhook lands here.

The rename: the ScaledObject was written for vLLM's old KV-cache name (`vllm:gpu_cache_usage_perc`, the body
of 0.8-era vLLM, derived from a recorded 0.32.0 body); the engine is upgraded to 0.32.0 (the recorded body),
the query goes empty, `llm_query_empty` turns 1 and LLMAutoscalerQueryEmpty fires.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from alerts import formats
from alerts.thresholds import DEFAULT
from exporter.demo.vllm_env import free_port
from tests.bundle.servers import (
    Served,
    alertmanager,
    prometheus,
    query,
    serve_exporter,
    static_job,
    wait_for,
    wait_http,
)
from tests.engines.derived import body_0_8_2
from tests.engines.engine_servers import recorded
from tests.kubecluster import Cluster

ROOT = Path(__file__).resolve().parents[2]
CRDS = [ROOT / "tests/fixtures/crds" / f"keda.sh_{plural}.yaml" for plural in ("scaledobjects", "scaledjobs")]
OLD_QUERY = 'avg(vllm:gpu_cache_usage_perc{job="vllm"})'  # a 0.8-era autoscaler on KV-cache pressure
WAITING_QUERY = 'sum(vllm:num_requests_waiting{job="vllm"})'  # the same name in every release


def install_keda_crds(cluster: Cluster) -> None:
    for crd in CRDS:
        cluster.apply(yaml.safe_load(crd.read_text(encoding="utf-8")))
    for plural in ("scaledobjects", "scaledjobs"):
        path = f"/apis/keda.sh/v1alpha1/{plural}"

        def served(path: str = path) -> bool:
            return bool(cluster.request("GET", path)[0] == 200)

        wait_for(served, 60, f"{plural} served")


def trigger(query: str) -> dict[str, Any]:
    return {"type": "prometheus", "metadata": {"serverAddress": "http://prometheus:9090", "query": query,
                                               "threshold": "0.8"}}  # fmt: skip


def objects(ns: str) -> list[dict[str, Any]]:
    dashboard = {
        "title": "vLLM",
        "panels": [{"type": "timeseries", "title": "Waiting", "targets": [{"refId": "A", "expr": WAITING_QUERY}]}],
    }
    return [
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": "vllm", "namespace": ns},
            "spec": {"scaleTargetRef": {"name": "vllm"}, "triggers": [trigger(OLD_QUERY)]},
        },
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledJob",
            "metadata": {"name": "batch", "namespace": ns},
            "spec": {
                "jobTargetRef": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
                "triggers": [trigger(WAITING_QUERY)],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "vllm-dashboard", "namespace": ns, "labels": {"grafana_dashboard": "1"}},
            "data": {"vllm.json": json.dumps(dashboard, indent=2)},
        },
        {  # not labelled for the sidecar: not watched
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "other", "namespace": ns},
            "data": {"x.json": '{"panels": []}'},
        },
    ]


def serve(tmp: Path, name: str, port: int, prometheus_url: str, kubeconfig: Path) -> Any:
    watchdog = {"enabled": True, "interval_seconds": 10, "timeout_seconds": 5, "prometheus": {"url": prometheus_url}}
    config = {"cluster": {"watchdog": watchdog}}
    proc, _ = serve_exporter(tmp, name, "cluster", f"127.0.0.1:{port}", config, str(kubeconfig))
    return proc


def metrics(url: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        assert response.status == 200
        return [line for line in response.read().decode().splitlines() if not line.startswith("#")]


def delivered(webhook: Served) -> list[dict[str, Any]]:
    return [a for post in webhook.posts for a in post.get("alerts", [])]


@pytest.fixture
def watched(kube_cluster: Cluster) -> Iterator[str]:
    install_keda_crds(kube_cluster)
    ns = kube_cluster.namespace("watchdog")
    for obj in objects(ns):
        kube_cluster.apply(obj)
    yield ns
    kube_cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))


def test_a_renamed_metric_empties_the_autoscaler_query_and_pages(
    kube_cluster: Cluster, watched: str, tmp_path: Path
) -> None:
    ns = watched
    body = {"text": body_0_8_2()}
    engine = Served(lambda path: (200, body["text"]) if path == "/metrics" else (404, ""))
    webhook = Served()
    fast = replace(DEFAULT, autoscaler_query_empty_for="5s", evaluation_interval="1s")
    rules = tmp_path / "rules.yaml"
    rules.write_text(formats.rule_file(fast))
    port = free_port()
    exporter_url = f"http://127.0.0.1:{port}"
    scrape = [static_job("vllm", [engine.url]), static_job("llm-exporter", [exporter_url])]
    try:
        with (
            alertmanager(tmp_path / "am", f"{webhook.url}/hook") as am_url,
            prometheus(tmp_path / "prom", scrape, rule_files=[rules], alertmanager_url=am_url) as prom_url,
        ):
            wait_for(lambda: bool(query(prom_url, OLD_QUERY)), 30, "the old engine scraped")
            with serve(tmp_path, "cluster", port, prom_url, kube_cluster.admin_kubeconfig) as proc:
                wait_http(f"{exporter_url}/readyz", 60, proc)
                so = f'llm_query_empty{{kind="ScaledObject",namespace="{ns}",name="vllm",location="trigger 0"}}'
                sj = f'llm_query_empty{{kind="ScaledJob",namespace="{ns}",name="batch",location="trigger 0"}}'
                panel = (
                    f'llm_query_empty{{kind="Dashboard",namespace="{ns}",name="vllm-dashboard",'
                    "location=\"vllm.json panel 'Waiting' query A\"}"
                )
                wait_for(lambda: f"{so} 0" in metrics(exporter_url), 40, "the autoscaler query with data")
                lines = metrics(exporter_url)
                assert f"{sj} 0" in lines and f"{panel} 0" in lines
                assert not [line for line in lines if 'name="other"' in line], "unlabelled ConfigMaps are not read"
                assert 'llm_query_source_available{resource="scaledobjects"} 1' in lines
                wait_for(lambda: bool(query(prom_url, f"{so} == 0")), 30, "Prometheus to scrape the verdict")
                assert not query(prom_url, 'ALERTS{alertname="LLMAutoscalerQueryEmpty"}')

                body["text"] = recorded("0.32.0")  # the upgrade: vllm:kv_cache_usage_perc from now on
                wait_for(lambda: f"{so} 1" in metrics(exporter_url), 40, "the autoscaler query empty")
                lines = metrics(exporter_url)
                assert f"{sj} 0" in lines and f"{panel} 0" in lines, "the other queries still have data"
                reason = [line for line in lines if line.startswith("llm_query_empty_reason{")]
                assert reason == [
                    f'llm_query_empty_reason{{kind="ScaledObject",namespace="{ns}",name="vllm",location="trigger 0",'
                    'reason="disappeared"} 1'
                ]
                wait_for(
                    lambda: any(a["labels"]["alertname"] == "LLMAutoscalerQueryEmpty" for a in delivered(webhook)),
                    60,
                    "LLMAutoscalerQueryEmpty at the webhook",
                )
                (alert,) = [a for a in delivered(webhook) if a["labels"]["alertname"] == "LLMAutoscalerQueryEmpty"]
                assert alert["status"] == "firing"
                assert {k: alert["labels"][k] for k in ("kind", "namespace", "name", "severity")} == {
                    "kind": "ScaledObject", "namespace": ns, "name": "vllm", "severity": "critical"}  # fmt: skip
            log = (tmp_path / "cluster.log").read_text()
            assert "vllm:gpu_cache_usage_perc" in log and "disappeared" in log, "the diagnosis is in the log"
    finally:
        engine.close()
        webhook.close()


class _Unauthorized(BaseHTTPRequestHandler):
    """A Prometheus behind an authenticating proxy, asked without credentials."""

    def _deny(self) -> None:
        body = b"Unauthorized\n"
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="prometheus"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._deny()

    def do_POST(self) -> None:
        self._deny()

    def log_message(self, *args: object) -> None:
        pass


def test_a_failing_prometheus_counts_errors_and_metrics_stay_served(
    kube_cluster: Cluster, watched: str, tmp_path: Path
) -> None:
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    denied = f"http://127.0.0.1:{proxy.server_address[1]}"
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    cases = {"unauthorized": (free_port(), denied), "unreachable": (free_port(), nowhere)}
    try:
        with (
            serve(tmp_path, "denied", *cases["unauthorized"], kube_cluster.admin_kubeconfig) as denied_proc,
            serve(tmp_path, "nowhere", *cases["unreachable"], kube_cluster.admin_kubeconfig) as nowhere_proc,
        ):
            for reason, (port, _) in cases.items():
                url = f"http://127.0.0.1:{port}"
                wait_http(f"{url}/readyz", 60, denied_proc if reason == "unauthorized" else nowhere_proc)
                prefix = f'llm_query_check_errors_total{{reason="{reason}"}} '

                def counted(url: str = url, prefix: str = prefix) -> bool:
                    return any(x.startswith(prefix) and float(x.split()[-1]) >= 1 for x in metrics(url))

                wait_for(counted, 30, f"{reason} counted")
                lines = metrics(url)
                assert 'llm_exporter_collector_success{collector="watchdog"} 1' in lines
                assert not [x for x in lines if x.startswith("llm_query_empty")], "no verdict without Prometheus"
                assert not [x for x in lines if x.startswith("llm_query_check_last_run_timestamp_seconds")]
        assert f"Prometheus {denied}: HTTP 401 Unauthorized" in (tmp_path / "denied.log").read_text()
        assert f"cannot reach {nowhere}" in (tmp_path / "nowhere.log").read_text()
    finally:
        proxy.shutdown()
        proxy.server_close()


CORPUS = ROOT / "tests/fixtures/check_corpus"
NEVER_RENAMED = 'avg(vllm:gpu_cache_usage_perc{job="vllm"})'  # an autoscaler written before vLLM 0.12


def test_an_old_dashboards_stale_panels_leave_the_scaled_objects_diagnosis_in_the_log_and_the_alert(
    kube_cluster: Cluster, tmp_path: Path
) -> None:
    """A cluster with one old dashboard (the EKS tutorial's V0-era vLLM dashboard: stale panels by the dozen)
    and a ScaledObject on the old KV-cache name, against a vLLM 0.32.0 that never had it: the exporter's
    rate-limited log holds the ScaledObject's diagnosis, and LLMAutoscalerQueryEmpty carries the successor."""
    install_keda_crds(kube_cluster)
    ns = kube_cluster.namespace("watchdog-old")
    dashboard = (CORPUS / "production-stack-eks-vllm-dashboard.json").read_text(encoding="utf-8")
    kube_cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "vllm-old", "namespace": ns, "labels": {"grafana_dashboard": "1"}},
            "data": {"vllm.json": dashboard},
        }
    )
    kube_cluster.apply(
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": "vllm", "namespace": ns},
            "spec": {"scaleTargetRef": {"name": "vllm"}, "triggers": [trigger(NEVER_RENAMED)]},
        }
    )
    body = recorded("0.32.0")
    engine = Served(lambda path: (200, body) if path == "/metrics" else (404, ""))
    webhook = Served()
    fast = replace(DEFAULT, autoscaler_query_empty_for="5s", evaluation_interval="1s")
    rules = tmp_path / "rules.yaml"
    rules.write_text(formats.rule_file(fast))
    port = free_port()
    exporter_url = f"http://127.0.0.1:{port}"
    scrape = [static_job("vllm", [engine.url]), static_job("llm-exporter", [exporter_url])]
    info = (
        f'llm_query_successor_info{{kind="ScaledObject",namespace="{ns}",name="vllm",location="trigger 0",'
        'renamed="vllm:gpu_cache_usage_perc",successor="vllm:kv_cache_usage_perc",'
        'fix="avg(vllm:kv_cache_usage_perc{job=\\"vllm\\"})"} 1'
    )
    try:
        with (
            alertmanager(tmp_path / "am", f"{webhook.url}/hook") as am_url,
            prometheus(tmp_path / "prom", scrape, rule_files=[rules], alertmanager_url=am_url) as prom_url,
        ):
            wait_for(lambda: bool(query(prom_url, "vllm:kv_cache_usage_perc")), 30, "the engine scraped")
            with serve(tmp_path, "old", port, prom_url, kube_cluster.admin_kubeconfig) as proc:
                wait_http(f"{exporter_url}/readyz", 60, proc)
                wait_for(lambda: info in metrics(exporter_url), 60, "the successor of the ScaledObject's name")
                stale = [
                    line
                    for line in metrics(exporter_url)
                    if line.startswith(f'llm_query_empty{{kind="Dashboard",namespace="{ns}"') and line.endswith(" 1")
                ]
                assert len(stale) > 5, "more stale panels than a per-template limit lets through"

                def paged() -> list[dict[str, Any]]:
                    return [a for a in delivered(webhook) if a["labels"]["alertname"] == "LLMAutoscalerQueryEmpty"]

                wait_for(lambda: bool(paged()), 60, "LLMAutoscalerQueryEmpty at the webhook")
                (alert,) = paged()
                labels = {k: alert["labels"].get(k) for k in ("name", "renamed", "successor")}
                assert labels == {
                    "name": "vllm",
                    "renamed": "vllm:gpu_cache_usage_perc",
                    "successor": "vllm:kv_cache_usage_perc",
                }
                assert (
                    "vllm:gpu_cache_usage_perc is now vllm:kv_cache_usage_perc" in alert["annotations"]["description"]
                )
            log = [line for line in (tmp_path / "old.log").read_text().splitlines() if "returns nothing" in line]
            scaled = [line for line in log if f"ScaledObject {ns}/vllm trigger 0" in line]
            assert scaled and "fix: avg(vllm:kv_cache_usage_perc" in scaled[0], "the diagnosis that pages is logged"
            assert log.index(scaled[0]) == 0, "and logged before any panel"
            panels = [line for line in log if f"Dashboard {ns}/vllm-old" in line]
            assert 0 < len(panels) <= 5 * 2, "the dashboard spends its own lines (5 a minute), not the others'"
    finally:
        engine.close()
        webhook.close()
        kube_cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))
