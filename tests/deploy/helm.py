"""Rendering the Helm chart with the real helm (built from helm.sh/helm/v4 by scripts/build-peers.sh), and
normalising chart and kustomize output so the two can be compared object by object."""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.manifests import ROOT, Obj
from tests.peers import peer

CHART = ROOT / "charts" / "llm-inference-exporter"
NAMESPACE = "llm-exporter"
# Labels Helm's conventions add and kustomize has no counterpart for; the comparison drops only these.
HELM_LABELS = (
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "helm.sh/chart",
)
CHECKSUM = "checksum/config"
# configMapGenerator appends a content hash (10 characters of [bcdfghkmt2-9]) to the names it generates
_HASH = re.compile(r"-[bcdfghkmt2-9]{10}$")


def helm(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([peer("helm"), *args], capture_output=True, text=True, timeout=timeout, check=False, env=env)


def template(*values: Path, sets: tuple[str, ...] = (), release: str = "llm-exporter") -> list[Obj]:
    """The objects `helm template` renders for the chart with these values files and --set options."""
    args = ["template", release, str(CHART), "--namespace", NAMESPACE]
    for path in values:
        args += ["--values", str(path)]
    for option in sets:
        args += ["--set", option]
    result = helm(*args)
    if result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stderr}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(result.stdout, Loader=loader) if doc]


def _configs(obj: Obj) -> None:
    """Exporter config files compare as the YAML they hold, not as text (comments, key order)."""
    if obj["kind"] == "ConfigMap" and "config.yaml" in obj.get("data", {}):
        obj["data"]["config.yaml"] = yaml.safe_load(obj["data"]["config.yaml"])


def _unhash(name: str) -> str:
    return _HASH.sub("", name)


def normalise_kustomize(objs: list[Obj]) -> dict[tuple[str, str], Obj]:
    """Kustomize output keyed by (kind, name): generated ConfigMap names without their hash suffix."""
    out = {}
    for original in objs:
        obj = copy.deepcopy(original)
        if obj["kind"] == "ConfigMap":
            obj["metadata"]["name"] = _unhash(obj["metadata"]["name"])
        if obj["kind"] in ("DaemonSet", "Deployment"):
            for volume in obj["spec"]["template"]["spec"].get("volumes", []):
                if "configMap" in volume:
                    volume["configMap"]["name"] = _unhash(volume["configMap"]["name"])
        _configs(obj)
        out[(obj["kind"], obj["metadata"]["name"])] = obj
    return out


def normalise_helm(objs: list[Obj]) -> dict[tuple[str, str], Obj]:
    """Chart output keyed by (kind, name): without Helm's bookkeeping labels and the config checksum."""
    out = {}
    for original in objs:
        obj = copy.deepcopy(original)
        labels: dict[str, Any] = obj["metadata"].get("labels", {})
        for key in HELM_LABELS:
            labels.pop(key, None)
        if obj["kind"] in ("DaemonSet", "Deployment"):
            meta = obj["spec"]["template"]["metadata"]
            annotations = meta.get("annotations", {})
            assert CHECKSUM in annotations, f"{obj['metadata']['name']}: a config change would not roll the pods"
            annotations.pop(CHECKSUM)
            if not annotations:
                meta.pop("annotations")
        _configs(obj)
        out[(obj["kind"], obj["metadata"]["name"])] = obj
    return out
