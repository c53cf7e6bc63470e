"""Real-shaped Kubernetes objects (as the API server serves them) for the cluster tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"


def node(
    name: str,
    gpus: Mapping[str, int | str] | int = 0,
    *,
    ready: bool = True,
    unschedulable: bool = False,
    taints: Sequence[Obj] = (),
    labels: Mapping[str, str] | None = None,
) -> Obj:
    extended = ({GPU: gpus} if gpus else {}) if isinstance(gpus, int) else dict(gpus)
    allocatable = {"cpu": "63900m", "memory": "503Gi", "pods": "110", **{k: str(v) for k, v in extended.items()}}
    spec: Obj = {"podCIDR": "10.0.0.0/24"}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = list(taints)
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "Ready", "status": "True" if ready else "Unknown", "reason": "KubeletReady"},
            ],
        },
    }


def container(name: str, gpus: int = 0, resource: str = GPU, **extra: Any) -> Obj:
    resources: Obj = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    if gpus:
        resources["limits"][resource] = str(gpus)  # GPUs are usually set as limits only
    return {"name": name, "image": "vllm/vllm-openai:v0.11.0", "resources": resources, **extra}


def pod(
    name: str,
    gpus: int = 0,
    *,
    namespace: str = "default",
    resource: str = GPU,
    node: str | None = None,
    phase: str | None = None,
    containers: Sequence[Obj] | None = None,
    init_containers: Sequence[Obj] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Obj | None = None,
    tolerations: Sequence[Obj] = (),
    scheduling_gates: Iterable[str] = (),
    claims: Sequence[Obj] = (),
    overhead: Mapping[str, str] | None = None,
) -> Obj:
    """A pod: bound to `node` (Running by default) or unbound and marked Unschedulable by the scheduler."""
    spec: Obj = {"containers": list(containers) if containers is not None else [container("main", gpus, resource)]}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if overhead:
        spec["overhead"] = dict(overhead)
    gates = [{"name": gate} for gate in scheduling_gates]
    if gates:
        spec["schedulingGates"] = gates
    if claims:
        spec["resourceClaims"] = list(claims)
    status: Obj = {"phase": phase or ("Running" if node else "Pending"), "qosClass": "Burstable"}
    if gates:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]
    elif not node:
        message = f"0/4 nodes are available: 4 Insufficient {resource}."
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        ]
    else:
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name.rsplit("-", 1)[0]}},
        "spec": spec,
        "status": status,
    }


def taint(key: str, effect: str = "NoSchedule", value: str | None = None) -> Obj:
    return {"key": key, "effect": effect, **({"value": value} if value is not None else {})}


def required_affinity(*expressions: Obj, fields: Sequence[Obj] = ()) -> Obj:
    term: Obj = {"matchExpressions": list(expressions)}
    if fields:
        term["matchFields"] = list(fields)
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def resource_slice(
    node_name: str,
    devices: Sequence[str] | int,
    *,
    driver: str = "gpu.nvidia.com",
    generation: int = 1,
    slice_count: int = 1,
    name: str | None = None,
    device_type: str = "gpu",
) -> Obj:
    names = [f"gpu-{i}" for i in range(devices)] if isinstance(devices, int) else list(devices)
    return {
        "kind": "ResourceSlice",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name or f"{node_name}-{driver}-{generation}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": generation, "resourceSliceCount": slice_count},
            "devices": [
                {
                    "name": device,
                    "attributes": {"type": {"string": device_type}, "productName": {"string": "NVIDIA H100"}},
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for device in names
            ],
        },
    }


def resource_claim(
    name: str,
    *,
    namespace: str = "default",
    device_class: str = "gpu.nvidia.com",
    count: int = 1,
    allocated: Sequence[tuple[str, str, str]] = (),
    admin_access: bool = False,
) -> Obj:
    """A claim for `count` devices of `device_class`; `allocated` = (driver, pool, device) results."""
    status: Obj = {}
    if allocated:
        results = [
            {
                "request": "gpus",
                "driver": d,
                "pool": p,
                "device": dev,
                **({"adminAccess": True} if admin_access else {}),
            }
            for d, p, dev in allocated
        ]
        status = {"allocation": {"devices": {"results": results}}}
    return {
        "kind": "ResourceClaim",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count},
                    }
                ]
            }
        },
        "status": status,
    }


def engine_deployment(
    namespace: str,
    name: str = "vllm",
    *,
    replicas: int = 1,
    opted_in: bool = True,
    annotations: Mapping[str, str] | None = None,
    pod_spec: Obj | None = None,
) -> Obj:
    """A Deployment of engine pods, labelled app=<name> and opted in to scraping (the annotation discovery
    and the cluster role's engine-pod watch read) plus `annotations`; `pod_spec` sets fields of the pod
    spec (one vllm container unless it names `containers`)."""
    labels = {"app": name}
    notes = {"llm-exporter.io/scrape": "true", **(annotations or {})} if opted_in else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": notes},
                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai"}], **(pod_spec or {})},
            },
        },
    }
