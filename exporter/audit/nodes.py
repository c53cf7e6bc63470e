"""Nodes and running pods as the GPU-node checks see them (pure): a node's labels, taints and accelerator
capacity; a pod's node, owner and whether it asks for an accelerator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exporter.k8s import accelerators, scheduling
from exporter.k8s.fields import as_dict, as_list, quantity, strs
from exporter.k8s.scheduling import Taint

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # GPU feature discovery, also before the device plugin runs


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]  # (key, value, effect), every effect
    gpus: dict[str, float]  # accelerator capacity

    @property
    def has_gpus(self) -> bool:
        return any(v > 0 for v in self.gpus.values()) or self.labels.get(GPU_PRESENT_LABEL) == "true"

    def schedulable_taints(self) -> tuple[Taint, ...]:
        return tuple(t for t in self.taints if t[2] in scheduling.BLOCKING_EFFECTS)


def node(obj: Mapping[str, Any]) -> Node | None:
    if obj.get("kind") not in (None, "Node"):
        return None
    meta, status = as_dict(obj.get("metadata")), as_dict(obj.get("status"))
    capacity = as_dict(status.get("capacity"))
    return Node(
        str(meta.get("name") or ""),
        strs(meta.get("labels")),
        scheduling.taints(as_dict(obj.get("spec"))),
        {str(k): quantity(v) for k, v in capacity.items() if accelerators.is_accelerator(str(k))},
    )


@dataclass(frozen=True)
class Pod:
    """A running pod as the GPU-node checks see it: where it runs, whether it asks for a GPU, who owns it."""

    namespace: str
    name: str
    node: str
    labels: dict[str, str]
    requests_gpu: bool
    owner_kind: str


def pod(obj: Mapping[str, Any]) -> Pod | None:
    meta, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    phase = as_dict(obj.get("status")).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return None
    owner = next(
        (str(as_dict(o).get("kind")) for o in as_list(meta.get("ownerReferences")) if as_dict(o).get("controller")),
        "",
    )
    if "kubernetes.io/config.mirror" in strs(meta.get("annotations")):
        owner = "Node"  # a static pod
    containers = (as_dict(c) for c in as_list(spec.get("containers")))
    return Pod(
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(spec["nodeName"]),
        strs(meta.get("labels")),
        any(accelerators.requested(as_dict(c.get("resources"))) for c in containers),
        owner,
    )
