"""Rendering the kustomizations and finding things in the result: shared by the deploy tests."""

from __future__ import annotations

import copy
import functools
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUSTOMIZATIONS = sorted(p.parent for p in DEPLOY.rglob("kustomization.yaml"))
OVERLAYS = {p.name: p for p in KUSTOMIZATIONS if p.parent.name == "overlays"}
BASE = DEPLOY / "base"
IMAGE = "ghcr.io/llm-inference-exporter/llm-exporter"

Obj = dict[str, Any]


def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:  # scripts/setup.sh installs it; a missing tool is a broken machine, not a skip
        raise RuntimeError("kubectl not found: run scripts/setup.sh (Debian package kubernetes-client)")
    return path


@functools.cache
def _render(path: Path) -> tuple[Obj, ...]:
    result = subprocess.run(
        [kubectl(), "kustomize", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path.relative_to(ROOT)} failed:\n{result.stderr}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(doc for doc in yaml.load_all(result.stdout, Loader=loader) if doc)


def render(path: Path = BASE) -> list[Obj]:
    """The objects `kubectl kustomize path` renders (fresh copies: tests may modify them)."""
    return copy.deepcopy(list(_render(path)))


def find(objs: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def kinds(objs: list[Obj]) -> set[str]:
    return {o["kind"] for o in objs}


def container(workload: Obj, name: str = "exporter") -> Obj:
    found: list[Obj] = [c for c in workload["spec"]["template"]["spec"]["containers"] if c["name"] == name]
    assert len(found) == 1, f"{workload['metadata']['name']}: no container {name!r}"
    return found[0]


def pod_spec(workload: Obj) -> Obj:
    spec: Obj = workload["spec"]["template"]["spec"]
    return spec


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def mounted_config(objs: list[Obj], workload: Obj, path: str) -> str:
    """The text of the file at `path` inside `workload`'s exporter container, from its ConfigMap volume."""
    spec = pod_spec(workload)
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for mount in container(workload).get("volumeMounts", []):
        prefix = mount["mountPath"].rstrip("/") + "/"
        if not path.startswith(prefix):
            continue
        source = volumes[mount["name"]].get("configMap")
        if source is None:
            continue
        data = find(objs, "ConfigMap", source["name"]).get("data", {})
        key = path[len(prefix) :]
        assert key in data, f"{path}: ConfigMap {source['name']} has no key {key!r} (has {sorted(data)})"
        text: str = data[key]
        return text
    raise AssertionError(f"{path} is not in a ConfigMap volume of {workload['metadata']['name']}")
