"""Builds the stub libnvidia-ml.so.1 (stub_nvml/stub_nvml.c) with the system C compiler.

Two variants: `full` (a current driver) and `old` (-DSTUB_OLD_DRIVER: no memory v2, no TemperatureV, no GPM).
Each lands in its own directory as `libnvidia-ml.so.1`, to be found through LD_LIBRARY_PATH, which is how
nvidia-ml-py finds the real library (`CDLL("libnvidia-ml.so.1")`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).parent / "stub_nvml" / "stub_nvml.c"
VARIANTS = {"full": [], "old": ["-DSTUB_OLD_DRIVER"]}


def build(out_dir: Path) -> dict[str, Path]:
    """{variant: directory holding libnvidia-ml.so.1}; fails loudly when there is no C compiler."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("building the stub libnvidia-ml.so.1 needs a C compiler (cc or gcc)")
    dirs = {}
    for variant, flags in VARIANTS.items():
        target = out_dir / variant
        target.mkdir(parents=True, exist_ok=True)
        lib = target / "libnvidia-ml.so.1"
        cmd = [
            cc,
            "-shared",
            "-fPIC",
            "-O2",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            *flags,
            "-Wl,-soname,libnvidia-ml.so.1",
            "-o",
            str(lib),
            str(SOURCE),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"building the stub NVML failed: {' '.join(cmd)}\n{done.stderr}")
        dirs[variant] = target
    return dirs


def env_for(lib_dir: Path | None, **stub: str) -> dict[str, str]:
    """A child environment that loads the stub from `lib_dir` (None: no NVML anywhere on the path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUB_NVML_")}
    env["LD_LIBRARY_PATH"] = str(lib_dir) if lib_dir else "/nonexistent"
    env["NODE_NAME"] = "gpu-node-0"  # as the DaemonSet sets it
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path])
    env.update({k.upper() if k.startswith("scenario_") else f"STUB_NVML_{k.upper()}": v for k, v in stub.items()})
    return env
