"""Which pod container holds which GPU: PodResources device IDs matched to this node's NVML devices (pure).

Device IDs from the NVIDIA device plugin: `GPU-<uuid>` (default), `MIG-<uuid>` (MIG), `<id>::<replica>` under
time-slicing or MPS (several pods share one GPU: one series per pod), plain NVML indices with
`deviceIDStrategy=index`. Any other ID (other device plugins, GKE's `nvidia0/gi0`) is not a GPU we can name
and is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from exporter.sources.podresources import ContainerDevices

GPU_RESOURCE_PREFIX = "nvidia.com/"  # only trust bare indices from NVIDIA's plugin: other plugins use them too


@dataclass(frozen=True, slots=True, order=True)
class PodGpu:
    """One `llm_gpu_pod_info` series."""

    gpu: str  # NVML index of the GPU (a MIG instance's parent); "" when NVML does not know the device
    uuid: str  # "" for an index-strategy ID that NVML could not resolve
    namespace: str
    pod: str
    container: str


def device_key(device_id: str, resource_name: str) -> tuple[str, str] | None:
    """("uuid", value) or ("index", value) for an NVIDIA device ID; None when it names no GPU."""
    base = device_id.split("::", 1)[0]  # time-slicing/MPS replica suffix
    if base.startswith(("GPU-", "MIG-")):
        return ("uuid", base)
    if base.isdigit() and resource_name.startswith(GPU_RESOURCE_PREFIX):
        return ("index", base)
    return None


def attribute(assignments: Iterable[ContainerDevices], devices: Mapping[str, str]) -> list[PodGpu]:
    """The pod-to-GPU series for `assignments`, given this node's devices as UUID → NVML index.

    `devices` also holds MIG UUIDs (mapped to their parent's index). With NVML unavailable it is empty and
    UUIDs are still reported, with gpu="".
    """
    uuid_of_index = {index: uuid for uuid, index in devices.items() if uuid.startswith("GPU-")}
    out: set[PodGpu] = set()
    for a in assignments:
        for device_id in a.device_ids:
            key = device_key(device_id, a.resource_name)
            if key is None:
                continue
            kind, value = key
            if kind == "uuid":
                gpu, uuid = devices.get(value, ""), value
            else:
                gpu, uuid = value, uuid_of_index.get(value, "")
            out.add(PodGpu(gpu, uuid, a.namespace, a.pod, a.container))
    return sorted(out)
