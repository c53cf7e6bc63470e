"""Accelerators per kind: the extended resources their device plugins advertise and the taint keys that keep
other pods off their nodes (pure).

A taint keyed by the resource name is the convention the ExtendedResourceToleration admission plugin serves
(it adds a toleration for each extended resource a pod requests:
https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#extendedresourcetoleration),
so every resource name is also a taint key; the vendors' and clouds' own keys are listed beside them.
Adding a kind is one entry in `ACCELERATORS`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from exporter.k8s.fields import as_dict, quantity


@dataclass(frozen=True)
class Accelerator:
    kind: str
    resources: tuple[str, ...]  # device-plugin resource names; `*` matches any run of characters
    taint_keys: tuple[str, ...] = ()  # documented taint keys besides the resource names


ACCELERATORS: tuple[Accelerator, ...] = (
    # whole GPUs, time-sliced shares renamed by the device plugin, MIG slices of the mixed strategy
    # (https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus); GKE taints GPU node pools
    # nvidia.com/gpu=present:NoSchedule (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus)
    Accelerator("nvidia", ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"), ("nvidia.com/gpu",)),
    # https://instinct.docs.amd.com/projects/k8s-device-plugin/en/latest/
    Accelerator("amd", ("amd.com/gpu",)),
    # https://github.com/intel/intel-device-plugins-for-kubernetes/blob/main/cmd/gpu_plugin/README.md
    # (i915 and xe are devices; millicores, memory.max and tiles are shares of one, requested beside them)
    Accelerator("intel-gpu", ("gpu.intel.com/i915", "gpu.intel.com/xe")),
    # https://docs.habana.ai/en/latest/Orchestration/Gaudi_Kubernetes/Device_Plugin_for_Kubernetes.html
    Accelerator("gaudi", ("habana.ai/gaudi",)),
    # https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/kubernetes-getting-started.html; EKS
    # node pools taint aws.amazon.com/neuron (https://eksworkshop.com/docs/aiml/chatbot/nodepool)
    Accelerator(
        "neuron",
        ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice"),
        ("aws.amazon.com/neuron",),
    ),
    # GKE taints TPU node pools google.com/tpu=present:NoSchedule
    # (https://cloud.google.com/kubernetes-engine/docs/concepts/tpus)
    Accelerator("tpu", ("google.com/tpu",), ("google.com/tpu",)),
)

# Taint keys clusters use for accelerator nodes of any kind: AKS's documented `sku=gpu:NoSchedule`
# (https://learn.microsoft.com/en-us/azure/aks/use-nvidia-gpu) and the bare `gpu` of many guides
GENERIC_TAINT_KEYS: tuple[str, ...] = ("sku", "gpu")

# Resources that hand out a time-shared GPU: the NVIDIA device plugin's time-slicing with renameByDefault,
# and HAMi's soft shares (https://github.com/Project-HAMi/HAMi)
SHARED_GPU_RESOURCE = re.compile(r"^(nvidia\.com/gpu\.shared|nvidia\.com/gpumem|nvidia\.com/gpucores)$")


@lru_cache(maxsize=4096)  # resource names are few; bounded all the same
def kind_of(resource: str) -> str | None:
    """The accelerator kind whose device plugin advertises `resource`; None for any other resource."""
    for a in ACCELERATORS:
        if any(fnmatch.fnmatchcase(resource, pattern) for pattern in a.resources):
            return a.kind
    return None


def is_accelerator(resource: str) -> bool:
    return kind_of(resource) is not None


def requested(resources: Mapping[str, Any]) -> dict[str, float]:
    """The accelerators a container's `resources` ask for, by resource name (the larger of limit and request:
    a device plugin's resource must be limited, and its request, when given, equal)."""
    found: dict[str, float] = {}
    for section in ("limits", "requests"):
        for name, value in as_dict(resources.get(section)).items():
            if is_accelerator(str(name)):
                found[str(name)] = max(found.get(str(name), 0.0), quantity(value))
    return found


def taint_keys(resources: Iterable[str]) -> frozenset[str]:
    """The taint keys that mark nodes of the accelerators these resources belong to, the generic ones included."""
    kinds = {kind_of(r) for r in resources}
    keys = set(GENERIC_TAINT_KEYS)
    for a in ACCELERATORS:
        if a.kind in kinds:
            keys.update(a.taint_keys)
            keys.update(r for r in a.resources if "*" not in r)
    # a MIG slice or a renamed share is tolerated under its own name too (ExtendedResourceToleration)
    keys.update(r for r in resources if kind_of(r) is not None)
    return frozenset(keys)


ALL_TAINT_KEYS: frozenset[str] = taint_keys(r for a in ACCELERATORS for r in a.resources if "*" not in r)
