"""Run in a child process whose LD_LIBRARY_PATH points at the stub libnvidia-ml.so.1: drives the real GPU
collector (real nvidia-ml-py bindings) and prints each scrape, separated by a line "--- <name>"."""

from __future__ import annotations

import os
import sys
import time

from exporter.collect import CollectorSet
from exporter.config import Gpu
from exporter.exposition import render
from exporter.gpu.collector import GpuCollector, build_gpu_collectors


def attribution(proc_root: str) -> None:
    """The real bindings' process list (nvmlDeviceGetComputeRunningProcesses_v3) joined to pods: the pods of
    test_gpu_processes, GPU 0 time-sliced between llama-0 and qwen-0, MIG instance 1 of GPU 2 to idle-0."""
    from functools import partial

    from exporter.gpu.processes import ProcessAttribution
    from exporter.sources.nvml import PynvmlSource
    from exporter.sources.podresources import ContainerDevices
    from exporter.sources.proc import read_cgroup
    from tests.gpu.test_gpu_processes import StaticPods, node_pods

    gpu0, mig = "GPU-5f8a0c3e-0000-4000-8000-000000000000", "MIG-5f8a0c3e-0000-4000-9000-000002000001"
    assignments = [
        ContainerDevices("ml", "llama-0", "vllm", "nvidia.com/gpu", (f"{gpu0}::0",)),
        ContainerDevices("ml", "qwen-0", "sglang", "nvidia.com/gpu", (f"{gpu0}::1",)),
        ContainerDevices("batch", "idle-0", "trainer", "nvidia.com/mig-1g.10gb", (mig,)),
    ]
    pods = ProcessAttribution(
        directory=StaticPods(node_pods()),
        assignments=lambda: assignments,
        cgroup_of=partial(read_cgroup, proc_root),
        idle_after_seconds=600,
        idle_utilization=0.05,
    )
    gpu = GpuCollector(PynvmlSource(), node="gpu-node-0", attribution=pods)
    gpu.start()
    text = render(gpu.collect())
    wanted = ("llm_gpu_pod_memory", "llm_gpu_unattributed", "llm_gpu_allocated_idle")
    print("--- attribution")
    print("".join(x for x in text.splitlines(True) if x.startswith(wanted) or 'field="p' in x), end="")
    gpu.close()


def main(scenario: str) -> None:
    if scenario == "attribution":
        attribution(os.environ["SCENARIO_PROC_ROOT"])
        return
    gpu, _pods = build_gpu_collectors(
        Gpu(enabled="auto", pod_resources_socket="/nonexistent/kubelet.sock"), kubeconfig="/nonexistent/kubeconfig"
    )
    assert isinstance(gpu, GpuCollector)
    if scenario == "no_nvml":
        out = render(CollectorSet([gpu]).collect())
        print("--- no_nvml")
        print("".join(line for line in out.splitlines(True) if "duration_seconds" not in line), end="")
        return
    gpu.start()  # NVML init and the first GPM sample
    time.sleep(0.15)  # GPM needs samples more than 100 ms apart
    events_file = os.environ.get("STUB_NVML_EVENTS_FILE")
    if events_file:
        with open(events_file, "a") as f:
            f.write(os.environ["SCENARIO_XIDS"].replace(",", "\n") + "\n")  # the driver reports XIDs
        wanted = int(os.environ["SCENARIO_XID_COUNTED"])
        deadline = time.monotonic() + 20
        while _xids_counted(render(gpu.collect())) < wanted and time.monotonic() < deadline:
            time.sleep(0.05)
    print(f"--- {scenario}")
    print(render(gpu.collect()), end="")
    lost_file = os.environ.get("STUB_NVML_LOST_FILE")
    if lost_file:
        with open(lost_file, "w") as f:
            f.write("1\n")  # GPU 1 falls off the bus
        time.sleep(0.15)
        print(f"--- {scenario}_lost")
        print(render(gpu.collect()), end="")
    gpu.close()


def _xids_counted(text: str) -> int:
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines() if line.startswith("llm_gpu_xid"))


if __name__ == "__main__":
    main(sys.argv[1])
