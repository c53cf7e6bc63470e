"""API objects (raw JSON dicts) → compact records: the reflectors' `transform` functions.

Each returns None for an object the cluster view does not need (a finished pod, a pod without GPUs or
claims), so it is never kept. Malformed values raise ValueError/KeyError/TypeError: the reflector skips
that one object and counts an error.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import Any

from exporter.kube.cel import Device, Version
from exporter.kube.records import (
    AffinityTerm,
    ClaimRecord,
    Constraints,
    DeviceRecord,
    NodeRecord,
    PodAffinityTerm,
    PodRecord,
    PodTraits,
    Requirement,
    Selector,
    SliceRecord,
    SpreadConstraint,
    Taint,
    Toleration,
    intern,
    intern_constraints,
    intern_traits,
)
from exporter.kube.requests import amount, effective_requests, parse_count, parse_quantity

Obj = dict[str, Any]

# Device-plugin resources counted as GPUs: whole GPUs (also time-sliced without rename: multiplied
# counts), renamed time-sliced shares, and MIG slices of the mixed strategy.
GPU_RESOURCE_PATTERNS: tuple[str, ...] = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*", "amd.com/gpu")
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})  # PreferNoSchedule does not block placement
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # the API server sets it on every namespace


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
    resources = tuple(
        sorted(
            (intern(name), amount(name, v)) for name, v in (status.get("allocatable") or {}).items() if not is_gpu(name)
        )
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
        resources=resources,
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


def selector_of(obj: Obj | None) -> Selector | None:
    """A metav1.LabelSelector object; None stays None (an unset selector, which selects nothing)."""
    if obj is None:
        return None
    match_labels = tuple(sorted((obj.get("matchLabels") or {}).items()))
    return Selector(match_labels, _requirements(obj.get("matchExpressions") or ()))


def _affinity_terms(section: Obj | None) -> tuple[PodAffinityTerm, ...]:
    terms = []
    for term in (section or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        namespace_selector = selector_of(term.get("namespaceSelector"))
        understood = namespace_selector is None or all(
            key == NAMESPACE_NAME_LABEL
            for key in (
                *(k for k, _ in namespace_selector.match_labels),
                *(r[0] for r in namespace_selector.expressions),
            )
        )
        terms.append(
            PodAffinityTerm(
                intern(term["topologyKey"]),
                selector_of(term.get("labelSelector")),
                tuple(term.get("namespaces") or ()),
                namespace_selector,
                understood,
            )
        )
    return tuple(terms)


def _spread(spec: Obj) -> tuple[SpreadConstraint, ...]:
    return tuple(
        SpreadConstraint(
            int(c["maxSkew"]),
            intern(c["topologyKey"]),
            selector_of(c.get("labelSelector")),
            int(c.get("minDomains") or 1),
            tuple(c.get("matchLabelKeys") or ()),
            (c.get("nodeAffinityPolicy") or "Honor") == "Honor",
            (c.get("nodeTaintsPolicy") or "Ignore") == "Honor",
        )
        for c in spec.get("topologySpreadConstraints") or ()
        if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
    )


def _unmodeled(spec: Obj) -> bool:
    """Host ports and PersistentVolumeClaims have filters of their own (NodePorts, volume binding, zones)."""
    ports = any(
        p.get("hostPort")
        for c in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ()))
        for p in c.get("ports") or ()
    )
    return ports or any("persistentVolumeClaim" in v or "ephemeral" in v for v in spec.get("volumes") or ())


def traits_of(meta: Obj, spec: Obj, other: dict[str, int], bound: bool) -> PodTraits:
    """The pod's traits; a bound pod keeps only what constrains others (labels, requests, anti-affinity)."""
    affinity = spec.get("affinity") or {}
    raw_labels = meta.get("labels")
    labels = tuple(sorted(raw_labels.items())) if raw_labels else ()
    requests = tuple(sorted(other.items()))
    labels = tuple((intern(k), v) for k, v in labels)
    anti_affinity = _affinity_terms(affinity.get("podAntiAffinity")) if affinity else ()
    if bound:
        return intern_traits(PodTraits(labels, requests, anti_affinity=anti_affinity))
    return intern_traits(
        PodTraits(
            labels,
            requests,
            _affinity_terms(affinity.get("podAffinity")),
            anti_affinity,
            _spread(spec),
            tuple(g["name"] for g in spec.get("schedulingGates") or ()),
            _unmodeled(spec),
        )
    )


def _reader(is_gpu: Callable[[str], bool]) -> Callable[[str, Any], int]:
    """GPU counts are whole numbers (`parse_count`); the other resources are quantities (`amount`)."""
    cache: dict[tuple[str, Any], int] = {}

    def read(name: str, value: Any) -> int:
        key = (name, value)
        found = cache.get(key)
        if found is None:
            found = parse_count(value) if is_gpu(name) else amount(name, value)
            if len(cache) >= 4096:
                cache.clear()
            cache[key] = found
        return found

    return read


_read_default = _reader(is_gpu_resource)


# What a bound pod's record shares with its replicas (GPU requests, traits), by its labels, with the parts of
# the spec they are read from: every replica of a workload, and every watch event of one pod, finds them
# here when those parts are equal (a C-level comparison), without reading them again. Bounded, so label
# sets that churn (StatefulSet pod names) cannot grow it without limit.
_BOUND_SHAPES: dict[tuple[Any, ...], tuple[Any, tuple[tuple[str, int], ...], PodTraits]] = {}
_BOUND_SHAPES_KEPT = 16384


def _bound_shape(meta: Obj, spec: Obj, is_gpu: Callable[[str], bool]) -> tuple[tuple[tuple[str, int], ...], PodTraits]:
    """(GPU requests, traits) of a bound pod."""
    containers = spec.get("containers") or ()
    inits = spec.get("initContainers")
    affinity = spec.get("affinity")
    signature = (
        [c.get("resources") for c in containers],
        [(c.get("resources"), c.get("restartPolicy")) for c in inits] if inits else None,
        spec.get("overhead"),
        spec.get("resources"),
        affinity.get("podAntiAffinity") if affinity else None,
    )
    labels = meta.get("labels")
    key = (tuple(labels.items()) if labels else (), id(is_gpu))
    found = _BOUND_SHAPES.get(key)
    if found is not None and found[0] == signature:
        return found[1], found[2]
    requests, other = _requests(spec, is_gpu)
    shape = (tuple(sorted((intern(k), v) for k, v in requests.items())), traits_of(meta, spec, other, True))
    if len(_BOUND_SHAPES) >= _BOUND_SHAPES_KEPT:
        _BOUND_SHAPES.clear()
    _BOUND_SHAPES[key] = (signature, *shape)
    return shape


def _requests(spec: Obj, is_gpu: Callable[[str], bool]) -> tuple[dict[str, int], dict[str, int]]:
    """(GPU requests, the other requests): one pass over the containers for every resource, then split."""
    every = effective_requests(
        spec.get("containers") or (),
        spec.get("initContainers") or (),
        spec.get("overhead"),
        is_gpu=None,
        parse=_read_default if is_gpu is is_gpu_resource else _reader(is_gpu),
        pod_level=spec.get("resources"),
    )
    requests: dict[str, int] = {}
    other: dict[str, int] = {}
    for name, count in every.items():
        (requests if is_gpu(name) else other)[name] = count
    return requests, other


def pod_record(obj: Obj, is_gpu: Callable[[str], bool] = is_gpu_resource) -> PodRecord | None:
    """Every pod that holds or wants GPUs, and every other bound pod (its cpu, memory and labels count for
    the pre-resource filters of the GPU pods); finished pods and unbound pods without GPUs are not kept."""
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    phase = status.get("phase") or "Pending"
    if phase in ("Succeeded", "Failed"):
        return None  # holds nothing and waits for nothing
    node = spec.get("nodeName") or ""
    claims = _claim_names(spec, status)
    if node:  # a bound pod: the shape its replicas share, and nothing about where it could go
        gpu_requests, traits = _bound_shape(meta, spec, is_gpu)
        return PodRecord(
            intern(meta.get("namespace", "")),
            meta["name"],
            node=intern(node),
            phase=intern(phase),
            requests=gpu_requests,
            claims=claims,
            traits=traits,
            terminating=bool(meta.get("deletionTimestamp")),
        )
    requests, other = _requests(spec, is_gpu)
    if not requests and not claims:
        return None
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
        constraints=constraints_of(spec),
        claims=claims,
        traits=traits_of(meta, spec, other, False),
        terminating=bool(meta.get("deletionTimestamp")),
    )


def _device_type(device: Obj) -> str:
    """The `type` attribute ({"string": "gpu"}), or "" when the driver publishes none."""
    attribute = (device.get("attributes") or {}).get("type") or {}
    return str(attribute.get("string", ""))


def _attribute_value(value: Obj) -> str | int | bool | Version:
    """A DeviceAttribute: exactly one of int, bool, string, version."""
    if "int" in value:
        return int(value["int"])
    if "bool" in value:
        return bool(value["bool"])
    if "string" in value:
        return str(value["string"])
    if "version" in value:
        return Version(str(value["version"]))
    raise ValueError(f"device attribute without a value: {value!r}")


def _by_domain(items: Obj, driver: str, read: Callable[[Obj], Any]) -> dict[str, dict[str, Any]]:
    """Qualified names ("domain/name") by their domain; unqualified ones belong to the driver's domain."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in items.items():
        domain, _, name = key.rpartition("/")
        out.setdefault(intern(domain or driver), {})[intern(name)] = read(value)
    return out


def device_view(device: Obj, driver: str) -> Device:
    """A ResourceSlice device (resource.k8s.io/v1: attributes and capacity on the device itself)."""
    return Device(
        driver,
        _by_domain(device.get("attributes") or {}, driver, _attribute_value),
        _by_domain(device.get("capacity") or {}, driver, lambda c: parse_quantity(c["value"])),
    )


def slice_record(obj: Obj) -> SliceRecord | None:
    spec = obj["spec"]
    node = spec.get("nodeName")
    if not node:
        return None  # network-attached pools (nodeSelector/allNodes) are not one node's capacity
    pool = spec["pool"]
    driver = intern(spec["driver"])
    devices = tuple(
        DeviceRecord(
            d["name"],
            _device_type(d),
            tuple(sorted({c["counterSet"] for c in d.get("consumesCounters") or ()})),
            device_view(d, driver),
        )
        for d in spec.get("devices") or ()
    )
    return SliceRecord(
        driver,
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
