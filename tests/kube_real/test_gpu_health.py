"""GPUs the device plugin withdrew, on the real control plane: a kwok node whose allocatable drops below its
capacity (as the kubelet writes it when the device plugin reports GPUs unhealthy). The cluster collector
counts the difference, kube-scheduler (the judge) places no pod on the GPUs withdrawn, and a healthy node
counts 0."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from functools import partial

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import Cluster as ClusterConfig
from exporter.exposition import render
from exporter.kube.collector import ClusterCollector, build_cluster_collectors
from tests.kubecluster import Cluster, wait_for

GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def collector(kube_cluster: Cluster) -> Iterator[ClusterCollector]:
    (built,) = build_cluster_collectors(ClusterConfig(), str(kube_cluster.admin_kubeconfig))
    assert isinstance(built, ClusterCollector), built
    built.start()
    wait_for(built.ready, 60, "cluster collector synced")
    yield built
    built.close()


def unhealthy(collector: ClusterCollector, nodes: set[str]) -> dict[str, float]:
    text = render(collector.collect())
    (family,) = [f for f in text_string_to_metric_families(text) if f.name == "llm_node_gpus_unhealthy"]
    return {
        s.labels["node"]: s.value for s in family.samples if s.labels["node"] in nodes and s.labels["resource"] == GPU
    }


def test_gpus_withdrawn_by_the_device_plugin_are_counted_and_unschedulable(
    kube_cluster: Cluster, collector: ClusterCollector
) -> None:
    suffix = uuid.uuid4().hex[:6]
    degraded, healthy = f"gpu-degraded-{suffix}", f"gpu-healthy-{suffix}"
    for name in (degraded, healthy):
        kube_cluster.add_node(name, capacity={GPU: "8"})
        wait_for(partial(kube_cluster.node_ready, name), 60, f"{name} Ready")
    try:
        # the kubelet's update when the device plugin marks two of eight GPUs unhealthy
        status, answer = kube_cluster.request(
            "PATCH",
            f"/api/v1/nodes/{degraded}/status",
            body={"status": {"allocatable": {GPU: "6"}}},
            content_type="application/merge-patch+json",
        )
        assert status == 200, answer
        nodes = {degraded, healthy}
        wait_for(lambda: unhealthy(collector, nodes) == {degraded: 2.0, healthy: 0.0}, 60, "unhealthy counts")

        ns = kube_cluster.namespace("gpuhealth")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "needs-seven", "namespace": ns},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": degraded},
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "vllm", "image": "vllm/vllm-openai", "resources": {"limits": {GPU: "7"}}}],
            },
        }
        kube_cluster.must("POST", f"/api/v1/namespaces/{ns}/pods", pod)

        def scheduler_verdict() -> str:
            _, got = kube_cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/needs-seven")
            for c in (got or {}).get("status", {}).get("conditions", []):
                if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable":
                    return str(c.get("message", ""))
            return ""

        message = wait_for(scheduler_verdict, 60, "the scheduler's verdict on a 7-GPU pod")
        assert f"Insufficient {GPU}" in message  # 8 in capacity, 6 offered: the scheduler agrees
    finally:
        kube_cluster.delete_nodes([degraded, healthy])
