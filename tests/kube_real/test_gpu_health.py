"""GPU health on the real control plane. GPUs the device plugin withdrew: a kwok node whose allocatable drops
below its capacity (as the kubelet writes it when the device plugin reports GPUs unhealthy); the cluster
collector counts the difference, kube-scheduler (the judge) places no pod on the GPUs withdrawn, and a
healthy node counts 0. GPU memory per pod: the node role's pod watch names a GPU process's pod."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from functools import partial
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from exporter.exposition import render
from exporter.gpu.collector import GpuCollector
from exporter.gpu.gpm import GpmSampler
from exporter.gpu.nodepods import NodePods
from exporter.gpu.pods import GpuPodsCollector
from exporter.gpu.processes import ProcessAttribution
from exporter.kube.collector import ClusterCollector
from exporter.sources.nvml import Process
from exporter.sources.podresources import PodResourcesClient
from exporter.sources.proc import read_cgroup
from tests.gpu.fake_nvml import FakeNvml
from tests.gpu.gpu_helpers import UUID0, two_gpus
from tests.gpu.test_gpu_pods import FakeKubelet, _pod
from tests.gpu.test_gpu_processes import v2_systemd_burstable, write_proc
from tests.kubecluster import Cluster, wait_for

GPU = "nvidia.com/gpu"


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


def test_gpu_processes_are_named_by_this_nodes_pods_on_the_api_server(kube_cluster: Cluster, tmp_path: Path) -> None:
    """NodePods watches the real API server: a pod bound to a kwok node, its container ID in its status as the
    kubelet writes it, a process of that container on the GPU (cgroup v2, systemd driver) counted for it."""
    suffix = uuid.uuid4().hex[:6]
    node = f"gpu-procs-{suffix}"
    kube_cluster.add_node(node, capacity={GPU: "2"})
    wait_for(partial(kube_cluster.node_ready, node), 60, f"{node} Ready")
    ns = kube_cluster.namespace("gpuprocs")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm-0", "namespace": ns},
        "spec": {
            "nodeName": node,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai", "resources": {"limits": {GPU: "1"}}}],
        },
    }
    created = kube_cluster.must("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    uid, cid = created["metadata"]["uid"], "7" * 64
    path = f"/api/v1/namespaces/{ns}/pods/vllm-0"

    def running() -> bool:
        return bool(kube_cluster.request("GET", path)[1].get("status", {}).get("containerStatuses"))

    wait_for(running, 60, "kwok runs the pod")
    status = kube_cluster.request("GET", path)[1]["status"]
    status["containerStatuses"][0]["containerID"] = f"containerd://{cid}"  # what the kubelet reports
    answer = kube_cluster.must("PUT", f"{path}/status", {**kube_cluster.request("GET", path)[1], "status": status})
    assert answer["status"]["containerStatuses"][0]["containerID"] == f"containerd://{cid}"

    proc = tmp_path / "proc"
    write_proc(proc, 300, v2_systemd_burstable(uid, cid))
    write_proc(proc, 301, "0::/system.slice/slurmd.service\n")
    sockets = Path(tempfile.mkdtemp(prefix="podres", dir="/tmp"))
    kubelet = FakeKubelet(str(sockets / "kubelet.sock"))
    kubelet.pods = [_pod(ns, "vllm-0", [("vllm", [(GPU, [UUID0])])])]
    kubelet.start()
    directory = NodePods(node, str(kube_cluster.admin_kubeconfig))
    lister = GpuPodsCollector(PodResourcesClient(kubelet.socket_path), node=node, devices=dict)
    lister.refresh()
    attribution = ProcessAttribution(
        directory=directory,
        assignments=lister.assignments,
        cgroup_of=lambda pid: read_cgroup(str(proc), pid),
        idle_after_seconds=600,
        idle_utilization=0.05,
    )
    gpus = two_gpus()
    gpus[0].processes = [Process(300, 12 << 30), Process(301, 1 << 30)]
    nvml = FakeNvml(gpus)
    collector = GpuCollector(nvml, node=node, sampler=GpmSampler(nvml), attribution=attribution)
    try:
        collector.start()
        key = f'node="{node}",gpu="0",uuid="{UUID0}"'
        want = {
            f'llm_gpu_pod_memory_used_bytes{{{key},namespace="{ns}",pod="vllm-0",container="vllm"}} {12 << 30}',
            f"llm_gpu_unattributed_memory_bytes{{{key}}} {1 << 30}",
        }

        def memory() -> set[str]:
            text = render(collector.collect())
            return {
                x
                for x in text.splitlines()
                if x.startswith(("llm_gpu_pod_memory", "llm_gpu_unattributed")) and key in x
            }

        wait_for(lambda: memory() == want, 60, "the process counted for its pod")
    finally:
        collector.close()
        kubelet.stop()
        shutil.rmtree(sockets, ignore_errors=True)
        kube_cluster.delete_nodes([node])
