"""Least privilege, proven on a real API server: each role's ServiceAccount, with the token TokenRequest
issues for it, may list and watch exactly what its code watches of what the cluster serves, and nothing else
(every verb of every served resource checked by the authorizer, against a ServiceAccount without bindings as
the baseline), and the exporter itself runs on that token."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.demo.vllm_env import free_port
from tests.deploy.manifests import BASE, OVERLAYS, ROOT, find, mounted_config, render
from tests.deploy.test_rbac import watched
from tests.deploy_real.helpers import ensure
from tests.deploy_real.privileges import allowed, discovered
from tests.kube.waiting import eventually
from tests.kubecluster import Cluster

NAMESPACE = "llm-exporter"
ROLES = {"node": ("DaemonSet", "llm-exporter-node"), "cluster": ("Deployment", "llm-exporter-cluster")}
ENGINE_BODY = ROOT / "tests" / "fixtures" / "vllm" / "0.32.0.prom"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def installed(crds: Cluster) -> Cluster:
    crds.kubectl("apply", "--server-side", "-k", str(OVERLAYS["kube-prometheus-stack"]))
    ensure(crds, "ServiceAccount", "no-bindings", NAMESPACE)  # the baseline
    return crds


def sa_user(name: str) -> str:
    return f"system:serviceaccount:{NAMESPACE}:{name}"


@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("namespace", ["", NAMESPACE, "kube-system"])
def test_the_authorizer_grants_exactly_list_and_watch_of_what_the_code_watches(
    installed: Cluster, role: str, namespace: str
) -> None:
    baseline = allowed(installed, sa_user("no-bindings"), namespace)  # discovery, self-reviews: every account
    granted = allowed(installed, sa_user(f"llm-exporter-{role}"), namespace) - baseline
    served = {(group, resource): is_namespaced for group, resource, is_namespaced, _ in discovered(installed)}
    expected = {
        (group, resource, verb)
        for group, resource in watched(role)
        # the authorizer is asked of each served resource: the grants of an operator's CRD this cluster does not
        # serve (NIM, Dynamo, GKE) are held to the code by tests/deploy/test_rbac.py; a namespace holds no nodes
        if (group, resource) in served and (not namespace or served[(group, resource)])
        for verb in ("list", "watch")
    }
    assert granted == expected


def test_the_review_answers_both_ways(installed: Cluster) -> None:
    """The baseline account is allowed what every authenticated user is, and no more."""
    baseline = allowed(installed, sa_user("no-bindings"), "")
    assert ("authorization.k8s.io", "selfsubjectaccessreviews", "create") in baseline
    assert ("", "nodes", "list") not in baseline


def test_real_requests_with_the_issued_token(installed: Cluster) -> None:
    token = installed.service_account_token(NAMESPACE, "llm-exporter-cluster")
    ok = ["/api/v1/nodes", "/api/v1/pods", "/apis/resource.k8s.io/v1/resourceslices",
          "/apis/resource.k8s.io/v1/resourceclaims", "/apis/resource.k8s.io/v1/deviceclasses",
          "/api/v1/pods?watch=1&timeoutSeconds=1",
          "/api/v1/configmaps?labelSelector=grafana_dashboard", "/apis/keda.sh/v1alpha1/scaledobjects",
          "/apis/keda.sh/v1alpha1/scaledjobs"]  # fmt: skip
    for path in ok:
        assert installed.request("GET", path, token=token)[0] == 200, path
    denied = [
        ("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/anything"),  # get of one object: never needed
        ("GET", "/api/v1/secrets"),
        ("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/anything"),  # the watchdog and audit list, never get
        ("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps"),
        ("DELETE", "/api/v1/nodes/anything"),
        ("GET", "/apis/monitoring.coreos.com/v1/servicemonitors"),
    ]
    for method, path in denied:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}} if method == "POST" else None
        assert installed.request(method, path, token=token, body=body)[0] == 403, (method, path)
    node_token = installed.service_account_token(NAMESPACE, "llm-exporter-node")
    assert installed.request("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-0", token=node_token)[0] == 200
    assert installed.request("GET", "/api/v1/nodes", token=node_token)[0] == 403


@contextmanager
def engine() -> Iterator[int]:
    """A port that serves a real vLLM 0.32.0 /metrics body, standing in for the engine pod's address."""
    body = ENGINE_BODY.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def kept_by_cluster_view(pod: dict[str, Any]) -> bool:
    """The pods the cluster role keeps: every unfinished pod bound to a node (its cpu and labels count for the
    GPU pods' filters), and unbound ones that ask for a GPU."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    spec = pod.get("spec") or {}
    wants = any(
        name.startswith(("nvidia.com/", "amd.com/"))
        for c in spec.get("containers") or ()
        for name in ((c.get("resources") or {}).get("limits") or {})
    )
    return bool(spec.get("nodeName")) or wants or bool(spec.get("resourceClaims"))


def add_objects(api: Cluster, engine_port: int) -> None:
    """A GPU node with a DRA slice and an opted-in engine pod on it, as the admin."""
    manifests = f"""
apiVersion: v1
kind: Node
metadata: {{name: gpu-0}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: gpu-0-gpu.nvidia.com}}
spec:
  driver: gpu.nvidia.com
  nodeName: gpu-0
  pool: {{name: gpu-0, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0}}]
---
apiVersion: v1
kind: Namespace
metadata: {{name: inference}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: default, namespace: inference}}
---
apiVersion: v1
kind: Pod
metadata:
  name: vllm-0
  namespace: inference
  annotations: {{llm-exporter.io/scrape: "true", llm-exporter.io/port: "{engine_port}"}}
spec:
  nodeName: gpu-0
  containers: [{{name: vllm, image: vllm/vllm-openai, resources: {{limits: {{nvidia.com/gpu: "1"}}}}}}]
"""
    api.kubectl("apply", "--server-side", "-f", "-", input_text=manifests)
    # no kubelet here: the admin reports the pod running at the address where the engine body is served
    api.kubectl("patch", "pod", "vllm-0", "-n", "inference", "--subresource=status", "--type=merge", "-p",
                '{"status": {"phase": "Running", "podIP": "127.0.0.1"}}')  # fmt: skip


@contextmanager
def exporter(api: Cluster, role: str, tmp: Path) -> Iterator[str]:
    """`llm-exporter serve` as the shipped workload runs it, with its ServiceAccount's token and config."""
    objs = render(BASE)
    workload = find(objs, *ROLES[role])
    config = tmp / f"{role}.yaml"
    config.write_text(mounted_config(objs, workload, "/etc/llm-exporter/config.yaml"))
    kubeconfig = api.kubeconfig(api.service_account_token(NAMESPACE, f"llm-exporter-{role}"), role)
    port = free_port()
    args = [sys.executable, "-m", "exporter", "serve", "--config", str(config), "--role", role,
            "--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{port}"]  # fmt: skip
    env = {**os.environ, "NODE_NAME": "gpu-0"}
    with (tmp / f"{role}.log").open("wb") as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(15)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except OSError:
        return 0, ""


def scrape(url: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(get(url + "/metrics")[1])
        for s in family.samples
    }


def test_the_exporter_runs_on_the_service_account_tokens(installed: Cluster, tmp_path: Path) -> None:
    with engine() as engine_port:
        add_objects(installed, engine_port)
        with exporter(installed, "cluster", tmp_path) as cluster, exporter(installed, "node", tmp_path) as node:
            for url in (cluster, node):
                eventually(lambda url=url: get(url + "/readyz")[0] == 200, timeout=30, interval=0.2)  # type: ignore[misc]
            samples = scrape(cluster)
            assert samples[("llm_exporter_collector_success", (("collector", "cluster"),))] == 1
            objects = {dict(k[1])["resource"]: v for k, v in samples.items() if k[0] == "llm_kubernetes_objects"}
            # the DRA slice was listed, not skipped as a forbidden optional resource
            nodes = len(installed.request("GET", "/api/v1/nodes")[1]["items"])
            pods = sum(map(kept_by_cluster_view, installed.request("GET", "/api/v1/pods")[1]["items"]))
            expected = {"nodes": nodes, "pods": pods, "resourceslices": 1, "resourceclaims": 0, "deviceclasses": 0}
            assert objects == expected and pods >= 1  # the GPU pod, and the bound pods of other tests
            errors = [k for k, v in samples.items() if k[0] == "llm_kubernetes_request_errors_total" and v]
            assert errors == []
            # the node role found the engine pod through its node-scoped pod watch and scraped it
            up = ("llm_engine_up", (("engine", "vllm"), ("namespace", "inference"), ("pod", "vllm-0")))
            node_samples = eventually(lambda: (s := scrape(node)).get(up) == 1 and s, timeout=30, interval=0.5)
            assert node_samples[("llm_exporter_collector_success", (("collector", "engine_discovery"),))] == 1
    logs = "".join(p.read_text() for p in tmp_path.glob("*.log"))
    assert "Forbidden" not in logs, logs  # the client names a 403 by its reason
