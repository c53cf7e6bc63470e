"""What an operator reader derives for one resource (shared by the readers and their registry)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.fields import as_dict, as_list
from exporter.k8s.frontends import Frontend
from exporter.k8s.workloads import Workload

# the objects of the input a reader may refer to, by kind
Refs = Mapping[str, Sequence[Mapping[str, Any]]]

# lists of a pod template merged entry by entry in a strategic merge patch (patchMergeKey name, containerPort)
_MERGED_BY_NAME = {"containers", "initContainers", "env", "volumes", "volumeMounts", "ports"}


@dataclass(frozen=True)
class Derived:
    """What an operator would create for one resource; `note` says why nothing was derived."""

    workloads: tuple[Workload, ...] = ()
    autoscalers: tuple[Autoscaler, ...] = ()
    services: tuple[tuple[str, str, dict[str, str]], ...] = ()  # (namespace, name, selector)
    note: str = ""
    frontends: tuple[Frontend, ...] = ()  # the Ingresses and routes it makes
    pdbs: tuple[tuple[str, str, dict[str, str]], ...] = ()  # the PodDisruptionBudgets it makes: as `services`


def named(refs: Refs, kinds: Sequence[str], name: str, namespace: str) -> Mapping[str, Any] | None:
    """The first object of `kinds` (in that order) called `name`; a namespaced kind only in `namespace`."""
    for kind in kinds:
        for obj in refs.get(kind, ()):
            meta = as_dict(obj.get("metadata"))
            if str(meta.get("name") or "") != name:
                continue
            if kind.startswith("Cluster") or str(meta.get("namespace") or namespace) == namespace:
                return obj
    return None


def listed(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in as_list(value) if isinstance(v, dict)]


def merge(base: Any, patch: Any, key: str = "") -> Any:
    """A strategic merge patch of `patch` over `base`, as far as the pod spec's fields go: maps merged,
    lists of named entries merged by name, other lists and values replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = merge(base[k], v, k) if k in base else v
        return out
    if key in _MERGED_BY_NAME and isinstance(base, list) and isinstance(patch, list):
        by = "containerPort" if key == "ports" else "name"
        merged = [dict(b) if isinstance(b, dict) else b for b in base]
        for item in listed(patch):
            at = next((i for i, b in enumerate(merged) if isinstance(b, dict) and b.get(by) == item.get(by)), None)
            if at is None:
                merged.append(item)
            else:
                merged[at] = merge(merged[at], item)
        return merged
    return patch
