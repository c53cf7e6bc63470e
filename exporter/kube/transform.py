"""API objects (raw JSON dicts) → compact records: the reflectors' `transform` functions.

Each returns None for an object the cluster view does not need (a finished pod, a pod without GPUs or
claims), so it is never kept. Malformed values raise ValueError/KeyError/TypeError: the reflector skips
that one object and counts an error.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import Any

from exporter.kube.records import (
    AffinityTerm,
    ClaimRecord,
    Constraints,
    DeviceRecord,
    NodeRecord,
    PodRecord,
    Requirement,
    SliceRecord,
    Taint,
    Toleration,
    intern,
    intern_constraints,
)
from exporter.kube.requests import effective_requests, parse_count

Obj = dict[str, Any]

# Device-plugin resources counted as GPUs: whole GPUs (also time-sliced without rename: multiplied
# counts), renamed time-sliced shares, and MIG slices of the mixed strategy.
GPU_RESOURCE_PATTERNS: tuple[str, ...] = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*", "amd.com/gpu")
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})  # PreferNoSchedule does not block placement


def gpu_matcher(patterns: Iterable[str] = GPU_RESOURCE_PATTERNS) -> Callable[[str], bool]:
    exact = frozenset(p for p in patterns if not any(c in p for c in "*?["))
    globs = tuple(p for p in patterns if p not in exact)
    cache: dict[str, bool] = {}

    def is_gpu(name: str) -> bool:
        hit = cache.get(name)
        if hit is None:
            hit = cache[name] = name in exact or any(fnmatch.fnmatchcase(name, g) for g in globs)
        return hit

    return is_gpu


is_gpu_resource = gpu_matcher()


def node_record(obj: Obj, is_gpu: Callable[[str], bool] = is_gpu_resource) -> NodeRecord:
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
    taints: tuple[Taint, ...] = tuple(
        (intern(t.get("key", "")), t.get("value", ""), t.get("effect", ""))
        for t in spec.get("taints") or ()
        if t.get("effect") in BLOCKING_EFFECTS
    )
    allocatable = tuple(
        sorted((intern(name), parse_count(v)) for name, v in (status.get("allocatable") or {}).items() if is_gpu(name))
    )
    capacity = tuple(
        sorted((intern(name), parse_count(v)) for name, v in (status.get("capacity") or {}).items() if is_gpu(name))
    )
    labels = {intern(k): v for k, v in (meta.get("labels") or {}).items()}
    return NodeRecord(
        intern(meta["name"]),
        ready=ready,
        cordoned=bool(spec.get("unschedulable")),
        labels=labels,
        taints=taints,
        allocatable=allocatable,
        capacity=capacity,
    )


def _requirements(items: Iterable[Obj]) -> tuple[Requirement, ...]:
    return tuple((r["key"], r["operator"], tuple(r.get("values") or ())) for r in items)


def constraints_of(spec: Obj) -> Constraints:
    selector = tuple(sorted((spec.get("nodeSelector") or {}).items()))
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    affinity = None
    if required is not None:
        affinity = tuple(
            AffinityTerm(_requirements(t.get("matchExpressions") or ()), _requirements(t.get("matchFields") or ()))
            for t in required.get("nodeSelectorTerms") or ()
        )
    tolerations: tuple[Toleration, ...] = tuple(
        (t.get("key", ""), t.get("operator", "Equal"), t.get("value", ""), t.get("effect", ""))
        for t in spec.get("tolerations") or ()
    )
    return intern_constraints(Constraints(selector, affinity, tolerations))


def _claim_names(spec: Obj, status: Obj) -> tuple[str, ...]:
    generated = {s["name"]: s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or ()}
    names = []
    for ref in spec.get("resourceClaims") or ():
        name = ref.get("resourceClaimName") or generated.get(ref["name"])
        if name:  # a template whose claim is not created yet has no name: nothing to count yet
            names.append(name)
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if extended:
        names.append(extended)
    return tuple(names)


def pod_record(obj: Obj, is_gpu: Callable[[str], bool] = is_gpu_resource) -> PodRecord | None:
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    phase = status.get("phase") or "Pending"
    if phase in ("Succeeded", "Failed"):
        return None  # holds nothing and waits for nothing
    requests = effective_requests(
        spec.get("containers") or (), spec.get("initContainers") or (), spec.get("overhead"), is_gpu=is_gpu
    )
    claims = _claim_names(spec, status)
    if not requests and not claims:
        return None
    node = spec.get("nodeName") or ""
    unschedulable = any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or ()
    )
    return PodRecord(
        intern(meta.get("namespace", "")),
        meta["name"],
        node=intern(node),
        phase=intern(phase),
        requests=tuple(sorted((intern(k), v) for k, v in requests.items())),
        unschedulable=unschedulable,
        gated=bool(spec.get("schedulingGates")),
        constraints=constraints_of(spec) if not node else Constraints(),  # a bound pod goes nowhere else
        claims=claims,
    )


def _device_type(device: Obj) -> str:
    """The `type` attribute ({"string": "gpu"}), or "" when the driver publishes none."""
    attribute = (device.get("attributes") or {}).get("type") or {}
    return str(attribute.get("string", ""))


def slice_record(obj: Obj) -> SliceRecord | None:
    spec = obj["spec"]
    node = spec.get("nodeName")
    if not node:
        return None  # network-attached pools (nodeSelector/allNodes) are not one node's capacity
    pool = spec["pool"]
    devices = tuple(
        DeviceRecord(
            d["name"],
            _device_type(d),
            tuple(sorted({c["counterSet"] for c in d.get("consumesCounters") or ()})),
        )
        for d in spec.get("devices") or ()
    )
    return SliceRecord(
        intern(spec["driver"]),
        intern(pool["name"]),
        node=intern(node),
        generation=int(pool.get("generation", 0)),
        slice_count=int(pool.get("resourceSliceCount", 1)),
        devices=devices,
    )


def claim_record(obj: Obj) -> ClaimRecord:
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    requests = []
    for request in (spec.get("devices") or {}).get("requests") or ():
        exactly = request.get("exactly") or (request.get("firstAvailable") or [{}])[0]  # first choice only
        if exactly.get("adminAccess") or exactly.get("allocationMode", "ExactCount") != "ExactCount":
            continue  # admin access consumes nothing; mode All has no count to place
        requests.append((intern(exactly.get("deviceClassName", "")), int(exactly.get("count", 1))))
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or ()
    allocated = tuple(
        (intern(r["driver"]), intern(r["pool"]), r["device"]) for r in results if not r.get("adminAccess")
    )
    return ClaimRecord(intern(meta.get("namespace", "")), meta["name"], requests=tuple(requests), allocated=allocated)
