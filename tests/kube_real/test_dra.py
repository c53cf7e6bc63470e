"""DRA with real allocation: a DeviceClass whose name is not the driver's, selecting devices by CEL, GPUs
published in ResourceSlices through the API, pods whose ResourceClaimTemplates the controller manager turns
into claims and the real kube-scheduler allocates. The exporter's free devices per node must be the
published devices minus those the scheduler allocated (read back from the claims' status), and a pod whose
claim the scheduler cannot satisfy is pending under the class's name (its selectors evaluated) with DESIGN's
reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import Cluster as ClusterConfig
from exporter.exposition import render
from exporter.kube.collector import ClusterCollector, build_cluster_collectors
from tests.kube_real.gpu_cluster import classify
from tests.kubecluster import Cluster, wait_for

DRIVER = "gpu.nvidia.com"
CLASS = "nvidia-gpu"  # deliberately not the driver's name
SELECTOR = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "gpu"'
Obj = dict[str, Any]


def _slice(node: str, gpus: int, migs: int = 0) -> Obj:
    devices = [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(gpus)]
    # MIG partitions the class does not select: the scheduler must not hand them out for this class
    devices += [{"name": f"mig-{i}", "attributes": {"type": {"string": "mig"}}} for i in range(migs)]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _pod(name: str, namespace: str, template: str = "one-gpu", node: str | None = None) -> Obj:
    spec: Obj = {
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
        "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
    }
    # only this test's nodes: the session's cluster is shared with other tests
    spec["nodeSelector"] = {"kubernetes.io/hostname": node} if node else {"dra-test": "yes"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _template(name: str, namespace: str, count: int) -> Obj:
    request = {"name": "gpu", "exactly": {"deviceClassName": CLASS, "count": count}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


@pytest.fixture
def dra_cluster(kube_cluster: Cluster) -> Iterator[tuple[Cluster, list[str], str]]:
    cluster, run = kube_cluster, uuid.uuid4().hex[:6]
    nodes = [f"dra-{run}-0", f"dra-{run}-1"]
    cluster.apply(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": CLASS},
            "spec": {"selectors": [{"cel": {"expression": SELECTOR}}]},
        }
    )
    for name in nodes:
        cluster.add_node(name, labels={"dra-test": "yes"})
    namespace = cluster.namespace(f"dra-{run}")
    try:
        for name in nodes:
            wait_for(partial(cluster.node_ready, name), 120, f"{name} Ready")
        cluster.must("POST", "/apis/resource.k8s.io/v1/resourceslices", _slice(nodes[0], 2, migs=3))
        cluster.must("POST", "/apis/resource.k8s.io/v1/resourceslices", _slice(nodes[1], 2))
        for name, count in (("one-gpu", 1), ("two-gpus", 2)):
            path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaimtemplates"
            cluster.must("POST", path, _template(name, namespace, count))
        yield cluster, nodes, namespace
    finally:
        cluster.must("DELETE", f"/api/v1/namespaces/{namespace}/pods", {"gracePeriodSeconds": 0}, ok=(200,))
        cluster.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(200, 202))
        for name in nodes:
            cluster.must("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{name}-{DRIVER}", ok=(200, 404))
        cluster.delete_nodes(nodes)


def _allocated(cluster: Cluster, namespace: str, bound: int) -> dict[str, int] | None:
    """node → devices the scheduler allocated, once `bound` pods are bound with their claims allocated."""
    pods = cluster.must("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    claims = cluster.must("GET", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")["items"]
    if sum(1 for p in pods if p["spec"].get("nodeName")) < bound:
        return None
    out: dict[str, int] = {}
    for claim in claims:
        for result in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ():
            assert result["driver"] == DRIVER and result["device"].startswith("gpu-"), result  # the CEL selector
            out[result["pool"]] = out.get(result["pool"], 0) + 1
    return out if sum(out.values()) >= bound else None


def _unschedulable(cluster: Cluster, namespace: str, name: str) -> bool:
    pod = cluster.must("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    return any(
        c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in pod["status"].get("conditions", [])
    )


def _view(collector: ClusterCollector, nodes: list[str], namespace: str) -> Obj:
    free: dict[str, float] = {}
    pending: dict[str, tuple[str, str, float]] = {}
    for family in text_string_to_metric_families(render(collector.collect())):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "llm_node_gpus_free" and labels["node"] in nodes:
                assert labels["resource"] == CLASS  # devices are counted per DeviceClass that selects them
                free[labels["node"]] = sample.value
            if sample.name == "llm_pending_pod_gpus_requested" and labels["namespace"] == namespace:
                pending[labels["pod"]] = (labels["resource"], labels["reason"], sample.value)
    return {"free": free, "pending": pending}


def test_free_devices_and_pending_reasons_follow_the_schedulers_allocation(
    dra_cluster: tuple[Cluster, list[str], str],
) -> None:
    cluster, nodes, namespace = dra_cluster
    # one GPU taken on each node of two: one free on each
    cluster.must("POST", f"/api/v1/namespaces/{namespace}/pods", _pod("one-a", namespace, node=nodes[0]))
    cluster.must("POST", f"/api/v1/namespaces/{namespace}/pods", _pod("one-b", namespace, node=nodes[1]))
    allocated = wait_for(lambda: _allocated(cluster, namespace, 2), 120, "claims allocated and pods bound")
    assert allocated == {nodes[0]: 1, nodes[1]: 1}
    # a claim for two GPUs: two are free, but on different nodes (the 2/2/1/1 case of DRA)
    cluster.must("POST", f"/api/v1/namespaces/{namespace}/pods", _pod("two", namespace, template="two-gpus"))
    wait_for(partial(_unschedulable, cluster, namespace, "two"), 120, "two-GPU pod Unschedulable")
    published = {nodes[0]: 2, nodes[1]: 2}  # the class's selector leaves the MIG partitions out
    free = [published[n] - allocated.get(n, 0) for n in nodes]
    (collector,) = build_cluster_collectors(ClusterConfig(), str(cluster.admin_kubeconfig))
    assert isinstance(collector, ClusterCollector)
    collector.start()
    try:
        wait_for(collector.ready, 60, "collector synced")
        expected = {
            "free": {n: float(f) for n, f in zip(nodes, free, strict=True)},
            "pending": {"two": (CLASS, classify(2, free), 2.0)},
        }
        assert classify(2, free) == "fragmented"  # 1 + 1 free
        wait_for(lambda: _view(collector, nodes, namespace) == expected, 30, f"exporter shows {expected}")
    finally:
        collector.close()
