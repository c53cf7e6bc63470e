"""DRA with real allocation: a DeviceClass whose name is not the driver's, selecting devices by CEL, GPUs
published in ResourceSlices through the API, pods whose ResourceClaimTemplates the controller manager turns
into claims and the real kube-scheduler allocates. The exporter's free devices per node must be the
published devices minus those the scheduler allocated (read back from the claims' status).
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


def _pod(name: str, namespace: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
        },
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
        cluster.add_node(name)
    namespace = cluster.namespace(f"dra-{run}")
    try:
        for name in nodes:
            wait_for(partial(cluster.node_ready, name), 120, f"{name} Ready")
        cluster.must("POST", "/apis/resource.k8s.io/v1/resourceslices", _slice(nodes[0], 2, migs=3))
        cluster.must("POST", "/apis/resource.k8s.io/v1/resourceslices", _slice(nodes[1], 1))
        template = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}},
        }
        cluster.must("POST", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaimtemplates", template)
        yield cluster, nodes, namespace
    finally:
        cluster.must("DELETE", f"/api/v1/namespaces/{namespace}/pods", {"gracePeriodSeconds": 0}, ok=(200,))
        cluster.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(200, 202))
        for name in nodes:
            cluster.must("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{name}-{DRIVER}", ok=(200, 404))
        cluster.delete_nodes(nodes)


def _allocated(cluster: Cluster, namespace: str) -> dict[str, int] | None:
    """node → devices the scheduler allocated, once every pod is bound and its claim allocated."""
    pods = cluster.must("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    claims = cluster.must("GET", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")["items"]
    if len(claims) < len(pods) or any(not p["spec"].get("nodeName") for p in pods):
        return None
    out: dict[str, int] = {}
    for claim in claims:
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results")
        if not results:
            return None
        for result in results:
            assert result["driver"] == DRIVER and result["device"].startswith("gpu-"), result  # the CEL selector
            out[result["pool"]] = out.get(result["pool"], 0) + 1
    return out


def _free(collector: ClusterCollector, nodes: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(render(collector.collect())):
        for sample in family.samples:
            if sample.name == "llm_node_gpus_free" and sample.labels["node"] in nodes:
                assert sample.labels["resource"] == DRIVER  # resources are named after the driver (DESIGN)
                out[sample.labels["node"]] = sample.value
    return out


def test_free_devices_are_published_minus_allocated_by_the_scheduler(
    dra_cluster: tuple[Cluster, list[str], str],
) -> None:
    cluster, nodes, namespace = dra_cluster
    for i in range(2):
        cluster.must("POST", f"/api/v1/namespaces/{namespace}/pods", _pod(f"dra-{i}", namespace))
    allocated = wait_for(lambda: _allocated(cluster, namespace), 120, "claims allocated and pods bound")
    assert sum(allocated.values()) == 2
    (collector,) = build_cluster_collectors(ClusterConfig(), str(cluster.admin_kubeconfig))
    assert isinstance(collector, ClusterCollector)
    collector.start()
    try:
        wait_for(collector.ready, 60, "collector synced")
        published = {nodes[0]: 2, nodes[1]: 1}  # the MIG partitions are not GPUs (dra.py)
        expected = {n: float(published[n] - allocated.get(n, 0)) for n in nodes}
        wait_for(lambda: _free(collector, nodes) == expected, 30, f"free devices {expected}")
    finally:
        collector.close()
