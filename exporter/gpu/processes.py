"""GPU memory per pod, memory of no pod, and assigned GPUs left idle: NVML's compute processes joined to pods.

Each process NVML lists on a device (a whole GPU or a MIG instance) is placed by its host PID's cgroup
(exporter/gpu/cgroups.py) in a pod UID and container ID, which this node's pods (a watch on the API server,
`spec.nodeName` = this node) name. Its memory counts for that container in `llm_gpu_pod_memory_used_bytes`
only when the kubelet assigned this device to that container (PodResources); all other memory on the device
— a host job, a process left over from a deleted pod, a debug container, a pod that sees GPUs it did not
request — is `llm_gpu_unattributed_memory_bytes`. The two add up to the memory of the listed processes, so
several pods on one GPU (time-slicing, MPS) each get their own processes' memory, never the device total.

`llm_gpu_allocated_idle` is 1 for an assigned container that has had, for `allocated_idle_seconds`, no
process on its device or a device utilisation below `allocated_idle_utilization` (on a shared GPU another
pod's work keeps it 0: the device cannot say whose kernels ran).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from exporter.catalogue import gpu as cat
from exporter.exposition import Family
from exporter.gpu.attribution import attribute
from exporter.gpu.cgroups import container_of
from exporter.gpu.fields import Field
from exporter.gpu.readings import DeviceReading
from exporter.sources.nvml import NvmlErrorKind, Process
from exporter.sources.podresources import ContainerDevices

Owner = tuple[str, str, str]  # namespace, pod, container


@dataclass(frozen=True, slots=True)
class PodNames:
    """A pod on this node as the API server names it: its UID and its containers' runtime IDs."""

    uid: str
    namespace: str
    pod: str
    containers: Mapping[str, str]  # runtime container ID (64 hex digits) → container name


def pod_names(obj: dict[str, Any]) -> PodNames | None:
    """Reflector transform of a Pod: init, regular and ephemeral containers with a runtime ID."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    uid = str(meta.get("uid") or "")
    if not uid:
        return None
    containers: dict[str, str] = {}
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            cid = str(cs.get("containerID") or "").partition("://")[2]  # containerd://<id>, cri-o://<id>
            if cid and cs.get("name"):
                containers[cid] = str(cs["name"])
    return PodNames(uid.lower(), str(meta.get("namespace", "")), str(meta.get("name", "")), containers)


class PodDirectory(Protocol):
    def start(self) -> None: ...
    def close(self) -> None: ...
    def pods(self) -> list[PodNames] | None:
        """This node's pods; None when the API server cannot be read (not synced, no configuration)."""
        ...


@dataclass(frozen=True, slots=True)
class DeviceProcesses:
    gpu: str
    uuid: str
    processes: list[Process]
    utilization: float | None  # device utilisation (or SM occupancy of a MIG instance); None: unknown


def owners(
    processes: Iterable[Process], cgroup_of: Callable[[int], str | None], pods: Iterable[PodNames]
) -> dict[int, Owner | None]:
    """PID → the container it runs in, as (namespace, pod, container); None: in no pod this node knows."""
    by_uid = {p.uid: p for p in pods}
    out: dict[int, Owner | None] = {}
    for proc in processes:
        if proc.pid in out:
            continue
        text = cgroup_of(proc.pid)
        where = container_of(text) if text is not None else None
        pod = by_uid.get(where.pod_uid) if where is not None else None
        name = pod.containers.get(where.container_id) if pod is not None and where is not None else None
        out[proc.pid] = (pod.namespace, pod.pod, name) if pod is not None and name is not None else None
    return out


def split_memory(
    device: DeviceProcesses, assigned: set[Owner], owner_of: Mapping[int, Owner | None]
) -> tuple[dict[Owner, float], float]:
    """(memory per assigned container, memory of everything else) on `device`, bytes (pure)."""
    per_pod = dict.fromkeys(assigned, 0.0)
    other = 0.0
    for proc in device.processes:
        if proc.used_memory is None:
            continue  # the driver cannot say (WDDM): neither a pod's nor unattributed
        owner = owner_of.get(proc.pid)
        if owner is not None and owner in assigned:
            per_pod[owner] += proc.used_memory
        else:
            other += proc.used_memory
    return per_pod, other


class IdleTracker:
    """Since when each (device, container) assignment has been idle; `update` returns which are idle now."""

    def __init__(self, idle_after_seconds: float) -> None:
        self._after = idle_after_seconds
        self._since: dict[tuple[str, Owner], float] = {}

    def update(self, now: float, busy: Mapping[tuple[str, Owner], bool]) -> dict[tuple[str, Owner], bool]:
        since = {key: self._since.get(key, now) for key, b in busy.items() if not b}
        self._since = since  # assignments gone or busy again start from scratch
        return {key: key in since and now - since[key] >= self._after for key in busy}


class ProcessAttribution:
    """Renders the per-pod memory, unattributed memory and allocated-idle families of one GPU scrape."""

    def __init__(
        self,
        *,
        directory: PodDirectory,
        assignments: Callable[[], list[ContainerDevices] | None],
        cgroup_of: Callable[[int], str | None],
        idle_after_seconds: float,
        idle_utilization: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._directory = directory
        self._assignments = assignments
        self._cgroup_of = cgroup_of
        self._idle_utilization = idle_utilization
        self._idle = IdleTracker(idle_after_seconds)
        self._clock = clock
        self._lock = threading.Lock()

    def start(self) -> None:
        self._directory.start()

    def close(self) -> None:
        self._directory.close()

    def families(self, node: str, readings: list[DeviceReading]) -> list[Family]:
        memory, unattributed, idle = (
            Family(cat.POD_MEMORY_USED),
            Family(cat.UNATTRIBUTED_MEMORY),
            Family(cat.ALLOCATED_IDLE),
        )
        devices = list(_devices(readings))
        pods, assignments = self._directory.pods(), self._assignments()
        if pods is None or assignments is None:
            for r in readings:  # reported per device through llm_gpu_field_unavailable
                if r.up:
                    r.errors.setdefault(Field.POD_MEMORY, NvmlErrorKind.UNAVAILABLE)
            return [memory, unattributed, idle]
        index = {r.uuid: r.gpu for r in readings if r.uuid}
        index.update((m.uuid, m.gpu) for r in readings for m in r.migs)
        assigned: dict[str, set[Owner]] = {}
        for p in attribute(assignments, index):
            assigned.setdefault(p.uuid, set()).add((p.namespace, p.pod, p.container))
        owner_of = owners((proc for d in devices for proc in d.processes), self._cgroup_of, pods)
        busy: dict[tuple[str, Owner], bool] = {}
        for d in devices:
            per_pod, other = split_memory(d, assigned.get(d.uuid, set()), owner_of)
            key = (node, d.gpu, d.uuid)
            for owner, used in sorted(per_pod.items()):
                memory.add((*key, *owner), used)
                has_process = any(owner_of.get(p.pid) == owner for p in d.processes)
                quiet = d.utilization is not None and d.utilization < self._idle_utilization
                busy[(d.uuid, owner)] = has_process and not quiet
            unattributed.add(key, other)
        with self._lock:
            idle_now = self._idle.update(self._clock(), busy)
        gpu_of = {d.uuid: d.gpu for d in devices}
        for (uuid, owner), flag in sorted(idle_now.items(), key=lambda kv: (gpu_of[kv[0][0]], kv[0])):
            idle.add((node, gpu_of[uuid], uuid, *owner), 1.0 if flag else 0.0)
        return [memory, unattributed, idle]


def _devices(readings: list[DeviceReading]) -> Iterable[DeviceProcesses]:
    """Every device whose process list was read: whole GPUs, and the instances of a GPU in MIG mode."""
    for r in readings:
        if r.up and r.processes is not None:
            yield DeviceProcesses(r.gpu, r.uuid, r.processes, r.values.get(Field.UTILIZATION))
        for m in r.migs:
            if m.processes is not None:
                yield DeviceProcesses(m.gpu, m.uuid, m.processes, m.values.get(Field.SM_OCCUPANCY))
