"""The control plane harness itself: each component does its job, as the other real-cluster tests assume."""

from __future__ import annotations

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
