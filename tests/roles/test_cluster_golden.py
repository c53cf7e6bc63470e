"""The whole exposition of `llm-exporter serve --role cluster`, byte for byte (node_exporter's e2e-output.txt).

The exporter runs as shipped, in its own process, against a real control plane (tests/kubecluster.py: etcd,
kube-apiserver, controller manager, scheduler, kwok) of its own: the suite's shared one (the kube_cluster
fixture) holds other tests' nodes and pods, which are part of a whole exposition. The scenario, small and
with every collector of the role in it:
- GPU nodes: gpu-a (4 GPUs, where the engine runs with 2), gpu-b (2), gpu-c (8, cordoned) and a CPU node;
- a pod asking for 4 GPUs, Pending with 4 free ones spread 2/2: fragmented (cluster);
- an engine Deployment (vLLM, 2 GPUs, opted in for scraping), its Service and an Ingress with its timeout
  annotation (routes, replicas, audit); the Deployment is Ready before the exporter starts, so no start-up
  is observed (a start's duration is the scheduler's and kwok's timing, not the exporter's);
- a KEDA ScaledObject (the published CRD) on the waiting queue, which has data, and a Grafana-sidecar
  dashboard ConfigMap on vLLM's old KV-cache name, which the 0.32.0 engine no longer exposes (watchdog,
  against a real Prometheus 3 that has scraped a fake engine replaying the recorded 0.32.0 body).
Any change to a family, a series, a help text or an order shows as a diff of golden/cluster.prom;
`tests/golden.py` masks only what differs between two runs.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.demo.vllm_env import free_port
from tests import golden
from tests.bundle.servers import process, prometheus, query, static_job, wait_http
from tests.engines.engine_servers import recorded
from tests.fakes.engine import FakeEngine
from tests.kubecluster import Cluster, start_cluster, wait_for
from tests.watchdog.test_watchdog_e2e import OLD_QUERY, WAITING_QUERY, install_keda_crds, trigger

GOLDEN = Path(__file__).parent / "golden"
GPU = "nvidia.com/gpu"
NS = "demo"
ENGINE = {"app": "vllm"}


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[Cluster]:
    with start_cluster(Path(tempfile.mkdtemp(prefix="golden-cluster-"))) as cluster:
        yield cluster


def engine_objects() -> list[dict[str, Any]]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.32.0",
        "args": ["--model", "tiny"],
        "resources": {"limits": {GPU: "2"}},
    }
    template = {
        "metadata": {"labels": ENGINE, "annotations": {"llm-exporter.io/scrape": "true"}},
        "spec": {"nodeSelector": {"pool": "a"}, "containers": [container]},
    }
    backend = {"service": {"name": "vllm", "port": {"number": 8000}}}
    rule = {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "vllm", "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": ENGINE}, "template": template},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "vllm", "namespace": NS},
            "spec": {"selector": ENGINE, "ports": [{"port": 8000}]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {
                "name": "chat",
                "namespace": NS,
                "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "600"},
            },
            "spec": {"ingressClassName": "nginx", "rules": [rule]},
        },
    ]


def watched_objects() -> list[dict[str, Any]]:
    dashboard = {
        "title": "vLLM",
        "panels": [{"type": "timeseries", "title": "KV cache", "targets": [{"refId": "A", "expr": OLD_QUERY}]}],
    }
    return [
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": "vllm", "namespace": NS},
            "spec": {"scaleTargetRef": {"name": "vllm"}, "triggers": [trigger(WAITING_QUERY)]},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "vllm-dashboard", "namespace": NS, "labels": {"grafana_dashboard": "1"}},
            "data": {"vllm.json": json.dumps(dashboard, indent=2)},
        },
    ]


def pending_pod() -> dict[str, Any]:
    container = {"name": "c", "image": "trainer", "resources": {"limits": {GPU: "4"}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big-0", "namespace": NS},
            "spec": {"containers": [container]}}  # fmt: skip


def build_scenario(cluster: Cluster) -> None:
    nodes: dict[str, dict[str, Any]] = {
        "gpu-a": {"capacity": {GPU: "4"}, "labels": {"pool": "a"}},
        "gpu-b": {"capacity": {GPU: "2"}},
        "gpu-c": {"capacity": {GPU: "8"}, "unschedulable": True},
        "cpu-0": {},
    }
    for name, spec in nodes.items():
        cluster.add_node(name, **spec)
    wait_for(lambda: all(cluster.node_ready(name) for name in nodes), 60, "the nodes Ready (kwok, controllers)")
    install_keda_crds(cluster)
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    account = f"/api/v1/namespaces/{NS}/serviceaccounts/default"  # pods are admitted once it exists
    wait_for(lambda: cluster.request("GET", account)[0] == 200, 60, f"default ServiceAccount in {NS}")
    for obj in [*engine_objects(), *watched_objects(), pending_pod()]:
        cluster.apply(obj)

    def engine_ready() -> bool:
        status, body = cluster.request("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/vllm")
        return status == 200 and body.get("status", {}).get("readyReplicas") == 1

    def unschedulable() -> bool:
        _, body = cluster.request("GET", f"/api/v1/namespaces/{NS}/pods/big-0")
        return any(c.get("reason") == "Unschedulable" for c in body.get("status", {}).get("conditions", []))

    wait_for(engine_ready, 120, "the engine Deployment Ready (scheduler, kwok)")
    wait_for(unschedulable, 60, "big-0 found Unschedulable by the scheduler")


def scrape(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
        assert response.status == 200
        return str(response.read().decode())


def test_cluster_role_exposition(own_cluster: Cluster, tmp_path: Path) -> None:
    build_scenario(own_cluster)
    body = recorded("0.32.0")
    with (
        FakeEngine(lambda path: (200, body) if path == "/metrics" else (404, "")) as engine,
        prometheus(tmp_path / "prometheus", [static_job("vllm", [engine.url])]) as prometheus_url,
    ):
        wait_for(lambda: bool(query(prometheus_url, WAITING_QUERY)), 60, "Prometheus to scrape the engine")
        watchdog = {"enabled": True, "interval_seconds": 600, "prometheus": {"url": prometheus_url}}
        (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"cluster": {"watchdog": watchdog}}))
        url = f"http://127.0.0.1:{free_port()}"
        args = [sys.executable, "-m", "exporter", "serve", "--role", "cluster", "--listen", url[len("http://") :]]
        args += ["--config", str(tmp_path / "cluster.yaml"), "--kubeconfig", str(own_cluster.admin_kubeconfig)]
        with process(args, tmp_path / "cluster.log") as proc:
            wait_http(f"{url}/readyz", 60, proc)
            watchdog_ran = "\nllm_query_check_last_run_timestamp_seconds "
            wait_for(lambda: watchdog_ran in scrape(url), 60, "the watchdog's first round")
            time.sleep(1)  # the watches' events of the exporter's own start have all arrived
            first = scrape(url)
            second = scrape(url)
    assert golden.exposition(first) == golden.exposition(second), "two scrapes of the same cluster differ"
    golden.check(GOLDEN / "cluster.prom", golden.exposition(first))
