"""The control plane harness itself: each component does its job, as the other real-cluster tests assume."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from exporter.demo.vllm_env import free_port
from tests import kubecluster
from tests.kubecluster import Cluster, wait_for


def test_gpu_node_takes_a_gpu_pod_and_the_next_one_waits(kube_cluster: Cluster) -> None:
    cluster = kube_cluster
    cluster.add_node("harness-gpu", capacity={"nvidia.com/gpu": "2"}, labels={"pool": "harness"})
    namespace = cluster.namespace("harness")
    try:
        wait_for(lambda: cluster.node_ready("harness-gpu"), 120, "kwok node Ready and untainted")
        node = cluster.must("GET", "/api/v1/nodes/harness-gpu")
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"  # kwok keeps what the node declared
        for name in ("first", "second"):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "nodeSelector": {"pool": "harness"},
                    "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
                },
            }
            cluster.must("POST", f"/api/v1/namespaces/{namespace}/pods", pod)

        def phase(name: str) -> str:
            body = cluster.must("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
            conditions = {c["type"]: c.get("reason", c["status"]) for c in body["status"].get("conditions", [])}
            return f"{body['spec'].get('nodeName', '')}/{body['status'].get('phase')}/{conditions.get('PodScheduled')}"

        wait_for(lambda: phase("first") == "harness-gpu/Running/True", 120, "first pod bound and Running")
        wait_for(lambda: phase("second") == "/Pending/Unschedulable", 120, "second pod Unschedulable")
    finally:
        cluster.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(200, 202))
        cluster.delete_nodes(["harness-gpu"])


def test_a_service_account_token_is_authorised_by_rbac(kube_cluster: Cluster) -> None:
    namespace = kube_cluster.namespace("harness")
    token = kube_cluster.service_account_token(namespace, "default")
    assert kube_cluster.request("GET", "/api/v1/nodes", token=token)[0] == 403
    assert kube_cluster.request("GET", "/version", token=token)[0] == 200
    kube_cluster.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(200, 202))


def test_a_port_taken_before_the_api_server_binds_it_starts_the_control_plane_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A free port may be taken between the pick and the bind (an outgoing connection's ephemeral port):
    the bring-up starts again on fresh ports rather than failing the tests that wait on it."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    picks = iter([None, None, taken.getsockname()[1]])  # etcd client, etcd peer, then the API server's

    def pick() -> int:
        port = next(picks, None)
        return port if port is not None else free_port()

    monkeypatch.setattr(kubecluster, "free_port", pick)
    try:
        with kubecluster.start_cluster(tmp_path) as cluster:
            assert cluster.workdir == tmp_path / "retry-2"
            assert "address already in use" in (tmp_path / "kube-apiserver.log").read_text()
            assert cluster.request("GET", "/readyz")[0] == 200
    finally:
        taken.close()
