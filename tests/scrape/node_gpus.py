"""A GPU node for a real `serve --role node` process: the stub libnvidia-ml.so.1 (real nvidia-ml-py bindings
load it through LD_LIBRARY_PATH, as they load the driver's) and a kubelet pod-resources socket, with
$NODE_NAME set the way the DaemonSet sets it from spec.nodeName."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exporter.sources._generated.podresources_v1 import podresources_pb2 as pb
from tests.gpu import stub_nvml_build
from tests.gpu.test_gpu_pods import FakeKubelet

STUB_UUID = "GPU-5f8a0c3e-0000-4000-8000-{:012d}"  # the stub's UUID of GPU i


@dataclass(frozen=True)
class GpuNode:
    env: dict[str, str]  # the serve process's environment
    gpu: dict[str, Any]  # the config's gpu section


@contextmanager
def gpu_node(
    workdir: Path, node: str, assigned: Mapping[tuple[str, str, str], list[str]], gpus: int = 2
) -> Iterator[GpuNode]:
    """`gpus` stub GPUs on `node`; `assigned` maps (namespace, pod, container) to the device IDs the kubelet
    reports for it. The driver reports one XID 13 on GPU 0, and a host job (no pod) holds 2 GiB of GPU 1: the
    host's /proc is a directory of the test's with that process's cgroup file."""
    lib = stub_nvml_build.build(workdir / "nvml")["full"]
    sockets = Path(tempfile.mkdtemp(prefix="podres", dir="/tmp"))  # unix socket paths: 108 bytes at most
    kubelet = FakeKubelet(str(sockets / "kubelet.sock"))
    kubelet.pods = [
        pb.PodResources(
            namespace=ns,
            name=pod,
            containers=[
                pb.ContainerResources(
                    name=container, devices=[pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=ids)]
                )
            ],
        )
        for (ns, pod, container), ids in assigned.items()
    ]
    kubelet.start()
    proc = workdir / "host-proc"
    (proc / "4242").mkdir(parents=True, exist_ok=True)
    (proc / "4242" / "cgroup").write_text("0::/system.slice/slurmd.service\n")
    (workdir / "nvml-procs").write_text(f"1 4242 {2 << 30}\n")
    (workdir / "nvml-events").write_text("0 13\n")
    stub = {"procs_file": str(workdir / "nvml-procs"), "events_file": str(workdir / "nvml-events")}
    env = {**os.environ, **stub_nvml_build.env_for(lib, gpus=str(gpus), **stub), "NODE_NAME": node}
    gpu = {
        "enabled": "true",
        "pod_resources_socket": kubelet.socket_path,
        "pod_resources_refresh_seconds": 1,
        "proc_root": str(proc),
    }
    try:
        yield GpuNode(env, gpu)
    finally:
        kubelet.stop()
        sockets.rmdir()
