"""The host's /proc: a process's cgroup membership, for attributing GPU memory to pods.

NVML reports host PIDs. The node DaemonSet mounts the host's /proc read-only (`gpu.proc_root`, default
`/proc`); `/proc/<pid>/cgroup` is world-readable, so no capability is needed beyond the mount.
"""

from __future__ import annotations

import os


def read_cgroup(proc_root: str, pid: int) -> str | None:
    """The text of `<proc_root>/<pid>/cgroup`; None when the process is gone (or never was)."""
    try:
        with open(os.path.join(proc_root, str(pid), "cgroup"), encoding="utf-8", errors="replace") as f:
            return f.read(64 * 1024)  # a few lines; bounded against a hostile or broken file
    except OSError:
        return None
