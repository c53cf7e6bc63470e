"""The effective request of a pod for a resource, by the scheduler's rule.

Kubernetes `component-helpers/resource.PodRequests`: init containers run one at a time before the app
containers, so they count by their maximum; sidecars (init containers with `restartPolicy: Always`) keep
running, so they add up, both to the app containers and to the init containers started after them:

    effective = max(Σ app + Σ sidecars, max_i(init_i + Σ sidecars started before i),
                    max over the running sidecar sums) + overhead

`req(c)` is `requests[r]`, else `limits[r]` (the API server copies limits into missing requests, and GPUs
are normally given as limits only). Pod-level `spec.resources` applies to cpu/memory/hugepages only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

_DECIMAL_SUFFIXES = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def parse_count(value: Any) -> int:
    """An extended-resource quantity ("8", 8, "1k") as a whole number; ValueError for anything else."""
    if isinstance(value, bool):
        raise ValueError(f"not a count: {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    for suffixes, width in ((_BINARY_SUFFIXES, 2), (_DECIMAL_SUFFIXES, 1)):
        suffix = text[-width:] if len(text) > width else ""
        if suffix in suffixes and suffix:
            return int(text[:-width]) * suffixes[suffix]
    if not text.lstrip("-").isdigit():
        raise ValueError(f"not a whole-number quantity: {value!r}")
    return int(text)


def container_requests(container: Mapping[str, Any], is_gpu: Callable[[str], bool]) -> dict[str, int]:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    out = {name: parse_count(v) for name, v in limits.items() if is_gpu(name)}
    out.update((name, parse_count(v)) for name, v in requests.items() if is_gpu(name))
    return out


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, count in more.items():
        total[name] = total.get(name, 0) + count


def _max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, count in other.items():
        if count > total.get(name, 0):
            total[name] = count


def effective_requests(
    containers: Iterable[Mapping[str, Any]],
    init_containers: Iterable[Mapping[str, Any]] = (),
    overhead: Mapping[str, Any] | None = None,
    *,
    is_gpu: Callable[[str], bool],
) -> dict[str, int]:
    """Resource name → effective request for the resources `is_gpu` selects; zero counts left out."""
    app: dict[str, int] = {}
    for container in containers:
        _add(app, container_requests(container, is_gpu))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for init in init_containers:
        own = container_requests(init, is_gpu)
        if init.get("restartPolicy") == "Always":
            _add(sidecars, own)
            _max_into(init_peak, sidecars)
        else:
            started = dict(sidecars)
            _add(started, own)
            _max_into(init_peak, started)
    _add(app, sidecars)
    _max_into(app, init_peak)
    if overhead:
        _add(app, {name: parse_count(v) for name, v in overhead.items() if is_gpu(name)})
    return {name: count for name, count in app.items() if count > 0}
