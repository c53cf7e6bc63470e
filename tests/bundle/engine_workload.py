"""An engine workload on a real control plane, as the cluster role's replica, autoscaler and route panels
need it: a StatefulSet of opted-in engine pods (kwok runs them; its first pod, vllm-0, is the one the node
exporter's engine target names), the Service that selects them, an Ingress to it and an HPA.

The StatefulSet starts with one replica; once Prometheus has seen it Ready, the HPA (minimum 2) is created
and the controller manager's HPA controller scales it to two, so the start-up histogram grows between two
scrapes (a histogram born at 1 shows no increase)."""

from __future__ import annotations

from typing import Any

from tests.bundle.servers import query, wait_for
from tests.kubecluster import Cluster

NAMESPACE = "demo"
WORKLOAD = "vllm"
ROUTE_TIMEOUT_SECONDS = 600


def _statefulset() -> dict[str, Any]:
    labels = {"app": WORKLOAD}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "serviceName": WORKLOAD,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {"llm-exporter.io/scrape": "true"}},
                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai"}]},
            },
        },
    }


def _hpa() -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": WORKLOAD},
            "minReplicas": 2,
            "maxReplicas": 3,
        },
    }


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {"selector": {"app": WORKLOAD}, "ports": [{"port": 8000}]},
    }


def _ingress() -> dict[str, Any]:
    backend = {"service": {"name": WORKLOAD, "port": {"number": 8000}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": "chat",
            "namespace": NAMESPACE,
            "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": str(ROUTE_TIMEOUT_SECONDS)},
        },
        "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}]},
    }


def deploy_engine(cluster: Cluster, prometheus_url: str) -> None:
    """Route, Service and a StatefulSet that its HPA scales from one replica to two, each start seen by
    Prometheus."""
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    account = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"  # pods are admitted once it exists
    wait_for(lambda: cluster.request("GET", account)[0] == 200, 60, f"default ServiceAccount in {NAMESPACE}")
    cluster.apply(_service())
    cluster.apply(_ingress())
    cluster.apply(_statefulset())
    ready = f'llm_replica_ready{{namespace="{NAMESPACE}",workload="{WORKLOAD}"}}'
    wait_for(lambda: [s["value"][1] for s in query(prometheus_url, ready)] == ["1"], 120, "one replica Ready")
    cluster.apply(_hpa())  # below its minimum: the HPA controller scales the StatefulSet to 2
    starts = f'llm_replica_startup_seconds_count{{namespace="{NAMESPACE}",workload="{WORKLOAD}",phase="starting"}}'
    seen: list[Any] = []
    url = prometheus_url

    def two_starts() -> bool:
        every = f'{{namespace="{NAMESPACE}",workload="{WORKLOAD}"}}'
        seen[:] = [(s["metric"]["__name__"], s["metric"].get("phase"), s["value"][1]) for s in query(url, every)]
        current = f'llm_autoscaler_current_replicas{{namespace="{NAMESPACE}",workload="{WORKLOAD}",kind="hpa"}}'
        return [s["value"][1] for s in query(url, starts)] == ["2"] and [
            s["value"][1] for s in query(url, current)
        ] == ["2"]

    try:
        wait_for(two_starts, 120, "a second start-up, by the HPA")
    except AssertionError as exc:
        pods = cluster.must("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
        stamps = [
            (p["metadata"]["name"], p["metadata"]["creationTimestamp"], p["status"].get("conditions")) for p in pods
        ]
        raise AssertionError(f"{exc}; replica series: {seen}; pods: {stamps}") from exc
