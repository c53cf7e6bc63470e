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
    "percli": "perses",
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


def perses_plugins() -> Path:
    """The Perses plugin folder `percli lint --plugin.path` reads (their CUE schemas, laid out by
    scripts/build-peers.sh from tools/peers/perses-plugins), built first when missing or out of date."""
    with _lock:
        subprocess.run(["bash", str(BUILD), "perses-plugins"], check=True, stdout=subprocess.DEVNULL)
    path = bin_dir().parent / "perses-plugins"
    if not (path / "prometheus" / "schemas").is_dir():
        raise FileNotFoundError(f"{path}: scripts/build-peers.sh perses-plugins did not lay it out")
    return path


def perses_ui() -> tuple[Path, Path]:
    """The Perses server with its web UI and the plugin folder it loads (the Prometheus datasource and the panel
    plugins, built from their published sources by scripts/build-perses-ui.sh), built first when missing."""
    with _lock:
        subprocess.run(["bash", str(BUILD), "perses-ui"], check=True, stdout=subprocess.DEVNULL)
    server, plugins = bin_dir() / "perses", bin_dir().parent / "perses-ui-plugins"
    if not server.is_file() or not (plugins / "prometheus" / "mf-manifest.json").is_file():
        raise FileNotFoundError(f"{server}, {plugins}: scripts/build-peers.sh perses-ui did not produce them")
    return server, plugins
