"""Routes read from a real API server: Ingresses, Gateway API HTTPRoutes (the published CRD), Services and
opted-in engine pods, through the routes collector's own list+watch reflectors and the admin kubeconfig."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from exporter.config import Cluster as ClusterConfig
from exporter.exposition import render
from tests.collectors import build_engine_pod_collectors
from tests.kubecluster import Cluster, wait_for

CRD = Path(__file__).resolve().parents[1] / "fixtures/gateway-api/gateway.networking.k8s.io_httproutes.yaml"
HTTPROUTES = "/apis/gateway.networking.k8s.io/v1/httproutes"


def objects(ns: str) -> list[dict[str, Any]]:
    def service(name: str, app: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"app": app}, "ports": [{"port": 8000}]},
        }

    def ingress(name: str, backend: str, annotations: dict[str, str], ingress_class: str = "nginx") -> dict[str, Any]:
        path = {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": backend, "port": {"number": 8000}}}}
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations},
            "spec": {"ingressClassName": ingress_class, "rules": [{"http": {"paths": [path]}}]},
        }

    engine_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "vllm-0",
            "namespace": ns,
            "labels": {"app": "vllm"},
            "annotations": {"llm-exporter.io/scrape": "true"},
        },
        # never scheduled (no node fits the selector): the routes need only its labels
        "spec": {"nodeSelector": {"routes-test": "nowhere"}, "containers": [{"name": "vllm", "image": "vllm"}]},
    }
    return [
        engine_pod,
        service("vllm", "vllm"),
        service("web", "web"),
        ingress(
            "chat",
            "vllm",
            {
                "nginx.ingress.kubernetes.io/proxy-read-timeout": "600",
                "nginx.ingress.kubernetes.io/proxy-buffering": "on",
            },
        ),
        ingress("site", "web", {}),  # no engine behind it
        ingress("plain", "vllm", {}),  # ingress-nginx's defaults: 60 s, no buffering
        # F5 NGINX (class nginx too): its own annotation, an nginx time; buffering on by default
        ingress("f5", "vllm", {"nginx.org/proxy-read-timeout": "600s"}),
        ingress("gke", "vllm", {}, "gce"),  # GKE's backend service timeout: 30 s; buffering not known
    ]


def httproute(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "api", "namespace": ns},
        "spec": {
            "rules": [
                {
                    "backendRefs": [{"name": "vllm", "port": 8000}],
                    "timeouts": {"request": "300s", "backendRequest": "2m"},
                }
            ]
        },
    }


def ingress_lines(ns: str) -> list[str]:
    return [
        f'llm_route_timeout_seconds{{namespace="{ns}",route="chat",kind="Ingress",source="annotation"}} 600',
        f'llm_route_timeout_seconds{{namespace="{ns}",route="f5",kind="Ingress",source="annotation"}} 600',
        f'llm_route_timeout_seconds{{namespace="{ns}",route="gke",kind="Ingress",source="default"}} 30',
        f'llm_route_timeout_seconds{{namespace="{ns}",route="plain",kind="Ingress",source="default"}} 60',
        f'llm_route_buffering{{namespace="{ns}",route="chat",kind="Ingress"}} 1',
        f'llm_route_buffering{{namespace="{ns}",route="f5",kind="Ingress"}} 1',
        f'llm_route_buffering{{namespace="{ns}",route="plain",kind="Ingress"}} 0',
    ]


def lines_for(text: str, ns: str) -> list[str]:
    return [line for line in text.splitlines() if f'namespace="{ns}"' in line]


def test_routes_to_engines_with_their_timeouts_from_a_real_api_server(kube_cluster: Cluster) -> None:
    cluster = kube_cluster

    def routes_collector() -> Any:
        collectors = build_engine_pod_collectors(ClusterConfig(), str(cluster.admin_kubeconfig))
        assert [c.name for c in collectors] == ["routes", "replicas", "audit"]  # one engine-pod watch feeds two
        return collectors[0]

    ns = cluster.namespace("routes")
    for obj in objects(ns):
        cluster.apply(obj)
    collector = routes_collector()
    collector.start()
    try:
        wait_for(collector.ready, 60, "the first lists")
        if cluster.request("GET", HTTPROUTES)[0] == 404:
            # without the Gateway API CRDs the HTTPRoute watch counts as empty; the Ingresses are served
            assert lines_for(render(collector.collect()), ns) == ingress_lines(ns)
        cluster.apply(yaml.safe_load(CRD.read_text()))
        wait_for(lambda: cluster.request("GET", HTTPROUTES)[0] == 200, 60, "the HTTPRoute CRD served")
        cluster.apply(httproute(ns))
    finally:
        collector.close()

    # a new collector: the first one may wait out the optional retry before it sees the new CRD
    collector = routes_collector()
    collector.start()
    try:
        wait_for(collector.ready, 60, "the first lists")
        expected = [
            f'llm_route_timeout_seconds{{namespace="{ns}",route="api",kind="HTTPRoute",source="spec"}} 120',
            *ingress_lines(ns),
        ]
        wait_for(lambda: lines_for(render(collector.collect()), ns) == expected, 30, "the HTTPRoute in the view")
        # a watch event: the annotation goes, the default comes back
        chat = objects(ns)[3]
        chat["metadata"]["annotations"] = {}
        cluster.must("PUT", f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses/chat", chat)
        wait_for(
            lambda: (
                f'llm_route_timeout_seconds{{namespace="{ns}",route="chat",kind="Ingress",source="default"}} 60'
                in lines_for(render(collector.collect()), ns)
            ),
            30,
            "the edited Ingress",
        )
    finally:
        collector.close()
        cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))
