"""GPUs a node has and does not offer: capacity − allocatable, from Node objects as the kubelet writes them."""

from __future__ import annotations

from exporter.kube.transform import node_record
from exporter.kube.unhealthy import Unhealthy, unhealthy_devices
from tests.kube.objects import node


def test_a_gpu_the_device_plugin_withdrew_is_counted_and_a_healthy_node_counts_zero() -> None:
    degraded = node("gpu-0", {"nvidia.com/gpu": 8, "nvidia.com/mig-1g.10gb": 7})
    degraded["status"]["allocatable"]["nvidia.com/gpu"] = "6"  # two GPUs reported unhealthy
    healthy = node("gpu-1", 8)
    cpu_only = node("cpu-0")
    records = [node_record(n) for n in (healthy, degraded, cpu_only)]
    assert unhealthy_devices(records) == [
        Unhealthy("gpu-0", "nvidia.com/gpu", 2),
        Unhealthy("gpu-0", "nvidia.com/mig-1g.10gb", 0),
        Unhealthy("gpu-1", "nvidia.com/gpu", 0),
    ]


def test_a_resource_gone_from_allocatable_counts_its_whole_capacity() -> None:
    n = node("gpu-0", 4)
    del n["status"]["allocatable"]["nvidia.com/gpu"]
    assert unhealthy_devices([node_record(n)]) == [Unhealthy("gpu-0", "nvidia.com/gpu", 4)]
