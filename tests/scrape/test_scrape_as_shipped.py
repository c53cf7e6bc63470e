"""Prometheus 3 scrapes as shipped: the plain-prometheus overlay applied to a real control plane, the overlay's
scrape job run by Prometheus with its `kubernetes_sd_configs` against the real kube-apiserver, alerts through
Alertmanager 0.35 to a webhook.

The DaemonSet and Deployment are the overlay's, applied server-side; the real controllers create their pods,
the real scheduler places the cluster role, kwok runs them. One change, for reachability only: the pod
templates get `hostNetwork: true`, so a pod's IP is its node's InternalIP, and the kwok nodes' InternalIPs
are loopback addresses (127.0.N.x) this test serves `serve --role node|cluster` on, at the port the
manifests declare. Each process gets what the kubelet would give its pod: `NODE_NAME` from the pod's
spec.nodeName, the node's GPUs (stub libnvidia-ml) and pod-resources socket. The scrape job is the file's,
with only `kubeconfig_file` added (Prometheus runs outside the cluster) and the interval shortened; no label
is injected anywhere: `node` on the GPU series comes from the exporter. The cluster role authenticates with
a token of the overlay's ServiceAccount. The module starts a control plane of its own: the overlay's
DaemonSet would otherwise place pods on other tests' nodes, at addresses nobody serves.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from alerts.thresholds import EXPORTER_JOB
from exporter.bundle import render
from exporter.check.evaluate import Checker
from exporter.check.inputs import file_queries
from exporter.sources.prometheus import HttpPrometheus
from tests.bundle.engine_workload import deploy_engine
from tests.bundle.replay import ReplayedVllm, delivered, fast_rules, node_config
from tests.bundle.servers import Served, alertmanager, prometheus, query, serve_exporter, wait_for, wait_http
from tests.deploy.manifests import OVERLAYS
from tests.deploy.manifests import render as kustomize
from tests.kubecluster import KWOK_ANNOTATION, Cluster, start_cluster
from tests.kubecluster import wait_for as wait_until
from tests.scrape.node_gpus import STUB_UUID, gpu_node

pytestmark = pytest.mark.slow

PLAIN = OVERLAYS["plain-prometheus"]
NAMESPACE = "llm-exporter"
SUBNET = f"127.0.{random.randint(100, 250)}"  # loopback: every 127/8 address is this machine
NODES = {  # name: (InternalIP, labels, nvidia.com/gpu)
    "gpu-0": (f"{SUBNET}.2", {"nvidia.com/gpu.present": "true"}, "2"),  # the node exporter's node
    "gpu-1": (f"{SUBNET}.3", {}, "2"),  # GPUs the cluster view counts, no node exporter
    "cpu-0": (f"{SUBNET}.4", {}, "0"),
}


def kwok_node(name: str, ip: str, labels: dict[str, str], gpus: str) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels},
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
        },
    }


def apply_overlay(cluster: Cluster) -> None:
    """The overlay's objects, namespace first; the pod templates on the host network (see the docstring)."""
    # the RuntimeClass the DaemonSet asks for, as the NVIDIA GPU operator creates it on a GPU cluster
    cluster.apply({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
                   "handler": "nvidia"})  # fmt: skip
    objs = sorted(kustomize(PLAIN), key=lambda o: o["kind"] != "Namespace")
    for obj in objs:
        if obj["kind"] in ("DaemonSet", "Deployment"):
            obj["spec"]["template"]["spec"]["hostNetwork"] = True
        cluster.apply(obj)


def running_pods(cluster: Cluster) -> dict[str, dict[str, Any]]:
    """component (node, cluster) -> its Running pod with an IP."""
    pods = cluster.must("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    return {
        p["metadata"]["labels"]["app.kubernetes.io/component"]: p
        for p in pods
        if p.get("status", {}).get("phase") == "Running" and p["status"].get("podIP")
    }


def serve_pod(
    tmp: Path, pod: dict[str, Any], config: dict[str, Any], env: dict[str, str] | None = None, kubeconfig: str = ""
) -> Any:
    """`serve` for `pod` at the pod's IP and the port its container declares, with its role's arguments."""
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "exporter")
    port = next(p["containerPort"] for p in container["ports"] if p["name"] == "metrics")
    role = container["args"][container["args"].index("--role") + 1]
    address = f"{pod['status']['podIP']}:{port}"
    return serve_exporter(tmp, pod["metadata"]["name"], role, address, config, kubeconfig, env)


def scrape_job(kubeconfig: Path) -> dict[str, Any]:
    (job,) = yaml.safe_load((PLAIN / "scrape-config.example.yaml").read_text(encoding="utf-8"))
    (sd,) = job["kubernetes_sd_configs"]
    sd["kubeconfig_file"] = str(kubeconfig)  # what an in-cluster Prometheus gets from its ServiceAccount
    job |= {"scrape_interval": "1s", "scrape_timeout": "1s"}
    assert isinstance(job, dict)
    return job


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("shipped")
    engine, webhook = ReplayedVllm(), Served()
    with start_cluster(tmp / "kube") as cluster:
        for name, (ip, labels, count) in NODES.items():
            cluster.must("POST", "/api/v1/nodes", kwok_node(name, ip, labels, count))
        apply_overlay(cluster)
        # a 3-GPU pod: 4 free, 2 and 2: fragmented
        pending = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "vllm-big-0", "namespace": "default"},
            "spec": {
                "containers": [{"name": "vllm", "image": "vllm", "resources": {"limits": {"nvidia.com/gpu": "3"}}}]
            },
        }
        cluster.must("POST", "/api/v1/namespaces/default/pods", pending)
        wait_until(lambda: running_pods(cluster).keys() == {"node", "cluster"}, 180, "both exporter pods Running")
        pods = running_pods(cluster)
        node_pod = pods["node"]
        assert node_pod["spec"]["nodeName"] == "gpu-0"
        assert node_pod["status"]["podIP"] == NODES["gpu-0"][0], "kwok: a host-network pod has its node's IP"
        rules = fast_rules(tmp / "rules.yaml")
        node_cfg = node_config(engine)
        assigned = {("demo", "vllm-0", "vllm"): [STUB_UUID.format(0)]}
        with gpu_node(tmp, node_pod["spec"]["nodeName"], assigned) as gpus:
            # the node role with its ServiceAccount's token too: its pod watch names GPU processes' pods
            node_token = cluster.service_account_token(NAMESPACE, node_pod["spec"]["serviceAccountName"])
            node_kubeconfig = str(cluster.kubeconfig(node_token, "llm-exporter-node"))
            node_proc, node_url = serve_pod(tmp, node_pod, node_cfg | {"gpu": gpus.gpu}, gpus.env, node_kubeconfig)
            # the cluster role with the token of the overlay's ServiceAccount, as its pod would mount it
            token = cluster.service_account_token(NAMESPACE, pods["cluster"]["spec"]["serviceAccountName"])
            kubeconfig = str(cluster.kubeconfig(token, "llm-exporter-cluster"))
            cluster_proc, cluster_url = serve_pod(tmp, pods["cluster"], {}, kubeconfig=kubeconfig)
            with node_proc as np, cluster_proc as cp:
                wait_http(f"{node_url}/readyz", proc=np)
                wait_http(f"{cluster_url}/readyz", timeout=60, proc=cp)
                job = scrape_job(cluster.admin_kubeconfig)
                with (
                    alertmanager(tmp / "am", f"{webhook.url}/hook") as am_url,
                    prometheus(tmp / "prom", [job], rule_files=[rules], alertmanager_url=am_url) as prom_url,
                ):
                    deploy_engine(cluster, prom_url)  # the replica and route panels
                    yield {"prometheus": prom_url, "webhook": webhook, "urls": {node_url, cluster_url}}
    engine.close()
    webhook.close()


def test_prometheus_discovers_both_exporter_pods_through_the_api_server(shipped: dict[str, Any]) -> None:
    prom = shipped["prometheus"]
    wait_for(lambda: len(query(prom, f'up{{job="{EXPORTER_JOB}"}} == 1')) == 2, 60, "two exporter targets up")
    targets = {f"http://{r['metric']['instance']}" for r in query(prom, f'up{{job="{EXPORTER_JOB}"}}')}
    assert targets == shipped["urls"]
    pods = {r["metric"]["pod"] for r in query(prom, f'up{{job="{EXPORTER_JOB}"}}')}
    assert all(p.startswith(("llm-exporter-node-", "llm-exporter-cluster-")) for p in pods), pods


# what the overlay cannot configure for everyone: a GPU price, a gateway (tests/bundle/test_e2e.py has both)
SHIPPED_WITHOUT = ("llm:model_cost_per_million_tokens", "llm:tenant_", "llm_gateway_")


def test_every_dashboard_query_returns_data_for_one_node(shipped: dict[str, Any]) -> None:
    prom = shipped["prometheus"]
    wait_for(lambda: bool(query(prom, "rate(llm_prompt_tokens_total[5m]) > 0")), 60, "growing counters")
    wait_for(lambda: bool(query(prom, "llm_gpu_memory_bandwidth_utilization_ratio")), 60, "GPM bandwidth")
    checker = Checker(HttpPrometheus(prom))
    queries = file_queries(render.ROOT / "dashboards/overview.json", {"node": "gpu-0"})
    failing: list[tuple[str, list[str]]] = []

    def all_ok() -> bool:
        # recording rules over rates need a few evaluations after the first scrapes
        failing[:] = [
            (r.query.where, r.reasons)
            for r in map(checker.check, queries)
            # as shipped no GPU price is set (none is true for everyone): the cost line is absent by design;
            # nor is a gateway (its address is the user's): the tenants' panels are empty by design too
            if r.status != "ok" and not any(absent in r.query.expr for absent in SHIPPED_WITHOUT)
        ]
        return not failing

    with contextlib.suppress(AssertionError):
        wait_for(all_ok, 30, "every dashboard query")
    assert failing == []
    (gpu,) = query(prom, f'llm_gpu_info{{uuid="{STUB_UUID.format(0)}"}}')
    assert gpu["metric"]["node"] == "gpu-0"


def test_alerts_fire_through_alertmanager(shipped: dict[str, Any]) -> None:
    webhook = shipped["webhook"]
    wanted = {"LLMRequestQueueBacklog", "LLMPodPendingWithFreeGPUs"}
    wait_for(lambda: wanted <= set(delivered(webhook)), 90, f"{wanted} at the webhook")
    pending = delivered(webhook)["LLMPodPendingWithFreeGPUs"]["labels"]
    assert (pending["pod"], pending["reason"]) == ("vllm-big-0", "fragmented")
    assert not {"LLMExporterDown", "LLMEngineDown", "LLMMetricMissing"} & set(delivered(webhook))
