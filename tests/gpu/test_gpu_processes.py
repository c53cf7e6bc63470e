"""Per-process GPU memory joined to pods: cgroup layouts (v1 and v2, systemd and cgroupfs drivers) written to
a /proc root by the test, PodResources from a real gRPC server on a unix socket, pods as the API server
serves them; per-pod, unattributed and allocated-idle series in exact exposition."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exporter.exposition import render
from exporter.gpu.cgroups import CgroupContainer, container_of
from exporter.gpu.collector import GpuCollector
from exporter.gpu.gpm import GpmSampler
from exporter.gpu.pods import GpuPodsCollector
from exporter.gpu.processes import PodNames, ProcessAttribution, pod_names
from exporter.sources.nvml import NvmlErrorKind, Process
from exporter.sources.podresources import PodResourcesClient
from exporter.sources.proc import read_cgroup
from tests.gpu.fake_nvml import GIB, FakeNvml
from tests.gpu.gpu_helpers import NODE, UUID0, UUID1, Clock, StepXid, two_gpus
from tests.gpu.test_gpu_pods import FakeKubelet, _pod

UID_A = "6f1e0a0e-1c2b-4d3e-8f9a-0b1c2d3e4f5a"  # llama-0 (Burstable, systemd driver, containerd)
UID_B = "0d9c8b7a-6f5e-4d3c-2b1a-09f8e7d6c5b4"  # qwen-0 (Guaranteed, systemd driver, CRI-O)
UID_C = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"  # idle-0 (BestEffort, cgroupfs driver, cgroup v1)
CID_A, CID_A_DEBUG, CID_B, CID_C = ("a" * 63 + "1", "d" * 63 + "2", "b" * 63 + "3", "c" * 63 + "4")


def v2_systemd_burstable(uid: str, cid: str) -> str:
    slice_uid = uid.replace("-", "_")
    return (
        "0::/kubepods.slice/kubepods-burstable.slice/"
        f"kubepods-burstable-pod{slice_uid}.slice/cri-containerd-{cid}.scope\n"
    )


def v2_systemd_guaranteed_crio(uid: str, cid: str) -> str:
    return f"0::/kubepods.slice/kubepods-pod{uid.replace('-', '_')}.slice/crio-{cid}.scope\n"


def v1_cgroupfs_besteffort(uid: str, cid: str) -> str:
    path = f"/kubepods/besteffort/pod{uid}/{cid}"
    hierarchies = [
        "hugetlb", "memory", "pids", "perf_event", "net_cls,net_prio", "freezer", "devices", "cpu,cpuacct",
        "cpuset", "blkio", "rdma",
    ]  # fmt: skip
    lines = [f"{12 - i}:{h}:{path}" for i, h in enumerate(hierarchies)]
    return "\n".join([*lines, f"1:name=systemd:{path}", "0::/"]) + "\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (v2_systemd_burstable(UID_A, CID_A), CgroupContainer(UID_A, CID_A)),
        (v2_systemd_guaranteed_crio(UID_B, CID_B), CgroupContainer(UID_B, CID_B)),
        (v1_cgroupfs_besteffort(UID_C, CID_C), CgroupContainer(UID_C, CID_C)),
        # v1 with the systemd driver: the same slice names on every hierarchy line
        (
            f"4:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_C.replace('-', '_')}"
            f".slice/cri-containerd-{CID_C}.scope\n1:name=systemd:/kubepods.slice\n",
            CgroupContainer(UID_C, CID_C),
        ),
        # cgroupfs, Guaranteed (no QoS level)
        (f"0::/kubepods/pod{UID_B}/{CID_B}\n", CgroupContainer(UID_B, CID_B)),
        # read from another cgroup namespace (the exporter's own): the path is relative to the reader's root
        (
            f"0::/../../kubepods-burstable-pod{UID_A.replace('-', '_')}.slice/cri-containerd-{CID_A}.scope\n",
            CgroupContainer(UID_A, CID_A),
        ),
        # in the pod's cgroup but in none of its containers
        (f"0::/kubepods.slice/kubepods-pod{UID_B.replace('-', '_')}.slice\n", CgroupContainer(UID_B, "")),
        ("0::/system.slice/slurmd.service\n", None),  # a host job
        ("0::/init.scope\n", None),
        ("0::/user.slice/user-1000.slice/session-3.scope\n", None),
        (f"0::/system.slice/docker-{CID_A}.scope\n", None),  # a container, but no pod
        ("", None),
    ],
)
def test_the_pod_and_container_of_a_cgroup_file(text: str, expected: CgroupContainer | None) -> None:
    assert container_of(text) == expected


def api_pod(namespace: str, name: str, uid: str, statuses: dict[str, list[tuple[str, str]]]) -> dict[str, Any]:
    """A Pod as the API server returns it (the fields the transform reads, and some it ignores)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": namespace, "name": name, "uid": uid, "resourceVersion": "4711"},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": n, "image": "vllm/vllm-openai"} for n, _ in statuses.get("containerStatuses", [])],
        },
        "status": {
            "phase": "Running",
            **{
                key: [{"name": n, "containerID": cid, "ready": True, "restartCount": 0} for n, cid in entries]
                for key, entries in statuses.items()
            },
        },
    }


class StaticPods:
    """The PodDirectory seam with this node's pods already synced."""

    def __init__(self, pods: list[PodNames] | None) -> None:
        self.items = pods

    def start(self) -> None: ...
    def close(self) -> None: ...
    def pods(self) -> list[PodNames] | None:
        return self.items


def node_pods() -> list[PodNames]:
    objects = [
        api_pod(
            "ml",
            "llama-0",
            UID_A,
            {
                "containerStatuses": [("vllm", f"containerd://{CID_A}")],
                "ephemeralContainerStatuses": [("debugger-x7k2p", f"containerd://{CID_A_DEBUG}")],
            },
        ),
        api_pod("ml", "qwen-0", UID_B, {"containerStatuses": [("sglang", f"cri-o://{CID_B}")]}),
        api_pod("batch", "idle-0", UID_C, {"containerStatuses": [("trainer", f"containerd://{CID_C}")]}),
    ]
    return [p for p in map(pod_names, objects) if p is not None]


@pytest.fixture
def kubelet() -> Iterator[FakeKubelet]:
    sockets = Path(tempfile.mkdtemp(prefix="podres", dir="/tmp"))
    server = FakeKubelet(str(sockets / "kubelet.sock"))
    server.pods = [  # GPU 0 time-sliced between two pods; GPU 1 whole to a third
        _pod("ml", "llama-0", [("vllm", [("nvidia.com/gpu", [f"{UUID0}::0"])])]),
        _pod("ml", "qwen-0", [("sglang", [("nvidia.com/gpu", [f"{UUID0}::1"])])]),
        _pod("batch", "idle-0", [("trainer", [("nvidia.com/gpu", [UUID1])])]),
    ]
    server.start()
    yield server
    server.stop()
    shutil.rmtree(sockets, ignore_errors=True)


def write_proc(root: Path, pid: int, cgroup: str) -> None:
    (root / str(pid)).mkdir(parents=True)
    (root / str(pid) / "cgroup").write_text(cgroup)


@pytest.fixture
def proc_root(tmp_path: Path) -> Path:
    root = tmp_path / "proc"
    write_proc(root, 101, v2_systemd_burstable(UID_A, CID_A))
    write_proc(root, 102, v2_systemd_guaranteed_crio(UID_B, CID_B))
    write_proc(root, 103, v2_systemd_burstable(UID_A, CID_A_DEBUG))  # kubectl debug into llama-0
    write_proc(root, 104, "0::/system.slice/slurmd.service\n")  # a host job
    # pid 105 has exited since NVML listed it: no /proc entry
    write_proc(root, 106, v2_systemd_burstable("99999999-8888-7777-6666-555555555555", "e" * 64))  # deleted pod
    write_proc(root, 107, v1_cgroupfs_besteffort(UID_C, CID_C))
    return root


def build(
    nvml: FakeNvml,
    clock: Clock,
    kubelet: FakeKubelet,
    proc_root: Path,
    pods: list[PodNames] | None,
    directory: StaticPods | None = None,
) -> tuple[GpuCollector, GpuPodsCollector]:
    lister = GpuPodsCollector(PodResourcesClient(kubelet.socket_path), node=NODE, devices=dict, clock=clock)
    lister.refresh()
    attribution = ProcessAttribution(
        directory=directory or StaticPods(pods),
        assignments=lister.assignments,
        cgroup_of=lambda pid: read_cgroup(str(proc_root), pid),
        idle_after_seconds=600,
        idle_utilization=0.05,
        clock=clock,
    )
    xid = StepXid(nvml, ready=lambda: nvml.initialised, wait_ms=0, stall_seconds=float("inf"), clock=clock)
    sampler = GpmSampler(nvml, clock=clock)
    collector = GpuCollector(nvml, node=NODE, sampler=sampler, xid=xid, attribution=attribution, clock=clock)
    collector.start()
    return collector, lister


def pod_lines(collector: GpuCollector) -> list[str]:
    text = render(collector.collect())
    wanted = ("llm_gpu_pod_memory", "llm_gpu_unattributed", "llm_gpu_allocated_idle")
    return [x for x in text.splitlines() if x.startswith(wanted) or 'field="pod_memory"' in x]


def test_memory_per_pod_on_a_shared_gpu_memory_of_no_pod_and_an_idle_assignment(
    clock: Clock, kubelet: FakeKubelet, proc_root: Path
) -> None:
    gpus = two_gpus()
    gpus[0].processes = [
        Process(101, 20 * GIB),  # llama-0/vllm
        Process(102, 30 * GIB),  # qwen-0/sglang
        Process(103, 1 * GIB),  # llama-0's debug container: not the container the GPU was assigned to
        Process(104, 2 * GIB),  # host job
        Process(105, GIB // 2),  # gone
        Process(106, GIB // 4),  # a process of a pod deleted from the API server
    ]
    gpus[1].processes = []  # idle-0/trainer holds its GPU and runs nothing
    collector, lister = build(FakeNvml(gpus), clock, kubelet, proc_root, node_pods())
    g0, g1 = f'node="{NODE}",gpu="0",uuid="{UUID0}"', f'node="{NODE}",gpu="1",uuid="{UUID1}"'
    expected_memory = [
        f'llm_gpu_pod_memory_used_bytes{{{g0},namespace="ml",pod="llama-0",container="vllm"}} {20 * GIB}',
        f'llm_gpu_pod_memory_used_bytes{{{g0},namespace="ml",pod="qwen-0",container="sglang"}} {30 * GIB}',
        f'llm_gpu_pod_memory_used_bytes{{{g1},namespace="batch",pod="idle-0",container="trainer"}} 0',
        f"llm_gpu_unattributed_memory_bytes{{{g0}}} {GIB + 2 * GIB + GIB // 2 + GIB // 4}",
        f"llm_gpu_unattributed_memory_bytes{{{g1}}} 0",
    ]
    idle = [
        f'llm_gpu_allocated_idle{{{g0},namespace="ml",pod="llama-0",container="vllm"}} 0',
        f'llm_gpu_allocated_idle{{{g0},namespace="ml",pod="qwen-0",container="sglang"}} 0',
        f'llm_gpu_allocated_idle{{{g1},namespace="batch",pod="idle-0",container="trainer"}} IDLE',
    ]
    assert pod_lines(collector) == [*expected_memory, *idle[:2], idle[2].replace("IDLE", "0")]
    clock.advance(599)
    lister.refresh()  # the kubelet's view, as the refresh thread keeps it
    assert pod_lines(collector)[-1] == idle[2].replace("IDLE", "0")
    clock.advance(1)  # 600 s without a process on its GPU
    lister.refresh()
    assert pod_lines(collector) == [*expected_memory, *idle[:2], idle[2].replace("IDLE", "1")]
    gpus[1].processes = [Process(107, 8 * GIB)]  # the trainer starts: busy again at once
    assert pod_lines(collector)[-1] == idle[2].replace("IDLE", "0")
    collector.close()


def test_a_quiet_gpu_with_processes_counts_as_idle(clock: Clock, kubelet: FakeKubelet, proc_root: Path) -> None:
    gpus = two_gpus()
    gpus[1].processes = [Process(107, 8 * GIB)]
    gpus[1].utilization = type(gpus[1].utilization)(gpu=1, memory=0)  # 1 %: below allocated_idle_utilization
    collector, lister = build(FakeNvml(gpus), clock, kubelet, proc_root, node_pods())
    assert collector.collect()  # the first sight of the quiet GPU
    clock.advance(600)
    lister.refresh()
    g1 = f'node="{NODE}",gpu="1",uuid="{UUID1}"'
    assert f'llm_gpu_allocated_idle{{{g1},namespace="batch",pod="idle-0",container="trainer"}} 1' in pod_lines(
        collector
    )
    collector.close()


def test_without_this_nodes_pods_per_pod_memory_is_unavailable_never_zero(
    clock: Clock, kubelet: FakeKubelet, proc_root: Path
) -> None:
    gpus = two_gpus()
    gpus[0].processes = [Process(101, 20 * GIB)]
    collector, _ = build(FakeNvml(gpus), clock, kubelet, proc_root, None)
    assert pod_lines(collector) == [
        f'llm_gpu_field_unavailable{{node="{NODE}",gpu="{i}",uuid="{u}",field="pod_memory",reason="unavailable"}} 1'
        for i, u in enumerate((UUID0, UUID1))
    ]
    collector.close()


def test_a_gpu_whose_processes_cannot_be_listed_reports_the_field_and_no_pod_series(
    clock: Clock, kubelet: FakeKubelet, proc_root: Path
) -> None:
    gpus = two_gpus()
    gpus[0].processes = [Process(101, 20 * GIB)]
    gpus[1].errors["compute_processes"] = NvmlErrorKind.NO_PERMISSION
    collector, _ = build(FakeNvml(gpus), clock, kubelet, proc_root, node_pods())
    lines = pod_lines(collector)
    assert not [x for x in lines if 'gpu="1"' in x and "field_unavailable" not in x]
    assert (
        f'llm_gpu_field_unavailable{{node="{NODE}",gpu="1",uuid="{UUID1}",field="processes",reason="no_permission"}} 1'
    ) in render(collector.collect())
    collector.close()


class BrokenPods(StaticPods):
    def pods(self) -> list[PodNames] | None:
        raise RuntimeError("watch cache corrupt")


def test_a_failing_attribution_degrades_only_the_pod_series(
    clock: Clock, kubelet: FakeKubelet, proc_root: Path
) -> None:
    gpus = two_gpus()
    gpus[0].processes = [Process(101, 20 * GIB)]
    collector, _ = build(FakeNvml(gpus), clock, kubelet, proc_root, None, BrokenPods(None))
    text = render(collector.collect())
    assert f'llm_gpu_memory_used_bytes{{node="{NODE}",gpu="0",uuid="{UUID0}"}}' in text  # the GPU series flow
    assert pod_lines(collector) == [
        f'llm_gpu_field_unavailable{{node="{NODE}",gpu="{i}",uuid="{u}",field="pod_memory",reason="error"}} 1'
        for i, u in enumerate((UUID0, UUID1))
    ]
    collector.close()
