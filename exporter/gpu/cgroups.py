"""Which pod and container a process belongs to, from its /proc/<pid>/cgroup text (pure).

The kubelet puts each pod in a cgroup named after its UID, and the runtime puts each container below it:

- systemd driver (cgroup v1 and v2): `/kubepods.slice/kubepods-burstable.slice/
  kubepods-burstable-pod<uid, '-' as '_'>.slice/cri-containerd-<id>.scope` (CRI-O: `crio-<id>.scope`; the
  Guaranteed class has no QoS level: `/kubepods.slice/kubepods-pod<uid>.slice/...`)
- cgroupfs driver: `/kubepods/burstable/pod<uid>/<id>` (Guaranteed: `/kubepods/pod<uid>/<id>`)

cgroup v2 has one line `0::<path>`; v1 one line per hierarchy, which all name the same pod. Read from a
process in another cgroup namespace the path is relative to the reader's root (`/../../kubepods-...`): only
the pod and container components are matched, wherever they sit. A process in no kubepods cgroup (a host
job, a system service) belongs to no pod.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_POD_SYSTEMD = re.compile(r"^kubepods(?:-[a-z]+)?-pod([0-9a-fA-F_]{32,36})\.slice$")
_POD_CGROUPFS = re.compile(r"^pod([0-9a-fA-F-]{32,36})$")
_CONTAINER = re.compile(r"^(?:cri-containerd-|crio-|docker-)?([0-9a-f]{64})(?:\.scope)?$")


@dataclass(frozen=True, slots=True)
class CgroupContainer:
    pod_uid: str
    container_id: str  # the runtime's ID (64 hex digits); "" for a process in the pod but in no container


def container_of(cgroup_text: str) -> CgroupContainer | None:
    """The pod (and container) of the process whose cgroup file is `cgroup_text`; None: in no pod."""
    for line in cgroup_text.splitlines():
        _hierarchy, _, rest = line.partition(":")
        _controllers, _, path = rest.partition(":")
        found = _in_path(path)
        if found is not None:
            return found
    return None


def _in_path(path: str) -> CgroupContainer | None:
    parts = [p for p in path.split("/") if p and p != ".."]
    if "kubepods" not in parts and "kubepods.slice" not in parts and not any(p.startswith("kubepods-") for p in parts):
        return None
    for i, part in enumerate(parts):
        match = _POD_SYSTEMD.match(part)
        uid = match.group(1).replace("_", "-") if match else None
        if uid is None and (match := _POD_CGROUPFS.match(part)):
            uid = match.group(1)
        if uid is None:
            continue
        container = _CONTAINER.match(parts[i + 1]) if i + 1 < len(parts) else None
        return CgroupContainer(uid.lower(), container.group(1) if container else "")
    return None
