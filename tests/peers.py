"""The real peers the tests run against, built from pinned Go modules by `scripts/build-peers.sh`.

`make test` builds them before pytest starts (once per machine; later runs find them cached), so a test
only locates a binary here. A test run without `make` builds what is missing on first use.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "scripts" / "build-peers.sh"

# binary -> the tools/peers module that builds it
MODULES = {
    "etcd": "etcd",
    "prometheus": "prometheus",
    "promtool": "prometheus",
    "alertmanager": "alertmanager",
    "kwok": "kwok",
    "kube-apiserver": "kubernetes",
    "kube-scheduler": "kubernetes",
    "kube-controller-manager": "kubernetes",
    "kubectl": "kubernetes",
    "helm": "helm",
    "thanos": "thanos",
    "actionlint": "actionlint",
    "sloth": "sloth",
    "jsonnet": "jsonnet",
}
_lock = threading.Lock()


def bin_dir() -> Path:
    cache = os.environ.get("LLM_EXPORTER_CACHE", str(Path.home() / ".cache" / "llm-inference-exporter"))
    return Path(cache) / "bin"


def peer(name: str) -> str:
    """The path of peer binary `name`, building its module first when it is missing or out of date."""
    module = MODULES[name]
    path = bin_dir() / name
    with _lock:
        # the build script is a no-op when the module's stamp matches its go.mod and go.sum
        subprocess.run(["bash", str(BUILD), module], check=True, stdout=subprocess.DEVNULL)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: scripts/build-peers.sh {module} did not produce it")
    return str(path)
