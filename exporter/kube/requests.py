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

import math
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
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


_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$")
_SCALE = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    **{k: Decimal(v) for k, v in {**_DECIMAL_SUFFIXES, **_BINARY_SUFFIXES}.items()},
}


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes resource.Quantity ("500m", "1.5Gi", "1e3", 4) as an exact decimal; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    text = str(value).strip()
    found = _QUANTITY.match(text)
    if not found:
        raise ValueError(f"not a quantity: {value!r}")
    number, suffix = found.groups()
    try:
        amount = Decimal(number)
    except InvalidOperation as exc:  # pragma: no cover - the pattern admits only decimals
        raise ValueError(f"not a quantity: {value!r}") from exc
    if suffix and suffix[0] in "eE" and len(suffix) > 1:
        return amount.scaleb(int(suffix[1:]))
    return amount * _SCALE[suffix or ""]


_AMOUNTS: dict[tuple[str, str], int] = {}  # the same few quantities ("4", "64Gi") come with every replica
_AMOUNTS_KEPT = 4096


def amount(name: str, value: Any) -> int:
    """The scheduler's integer for a request or allocatable: millicores for cpu, else the value rounded up
    (`Quantity.MilliValue()` / `Quantity.Value()`)."""
    key = (name if name == "cpu" else "", str(value))
    found = _AMOUNTS.get(key)
    if found is None:
        quantity = parse_quantity(value)
        found = math.ceil(quantity * 1000) if name == "cpu" else math.ceil(quantity)
        if len(_AMOUNTS) >= _AMOUNTS_KEPT:
            _AMOUNTS.clear()
        _AMOUNTS[key] = found
    return found


def _count(_: str, value: Any) -> int:
    return parse_count(value)


def container_requests(
    container: Mapping[str, Any], is_gpu: Callable[[str], bool] | None, parse: Callable[[str, Any], int] = _count
) -> dict[str, int]:
    """The container's request per resource `is_gpu` selects (None: every resource)."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    if is_gpu is None:
        out = {name: parse(name, v) for name, v in limits.items()}
        out.update({name: parse(name, v) for name, v in requests.items()})
        return out
    out = {name: parse(name, v) for name, v in limits.items() if is_gpu(name)}
    out.update((name, parse(name, v)) for name, v in requests.items() if is_gpu(name))
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
    is_gpu: Callable[[str], bool] | None,
    parse: Callable[[str, Any], int] = _count,
    pod_level: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """Resource name → effective request for the resources `is_gpu` selects (None: all); zero counts left out.

    `pod_level` is the pod's `spec.resources`: where it sets cpu or memory, that replaces the containers'
    sum (the scheduler's rule with pod-level resources); `parse(name, value)` reads each quantity."""
    app: dict[str, int] = {}
    for container in containers:
        _add(app, container_requests(container, is_gpu, parse))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for init in init_containers:
        own = container_requests(init, is_gpu, parse)
        if init.get("restartPolicy") == "Always":
            _add(sidecars, own)
            _max_into(init_peak, sidecars)
        else:
            started = dict(sidecars)
            _add(started, own)
            _max_into(init_peak, started)
    _add(app, sidecars)
    _max_into(app, init_peak)
    if pod_level:
        app.update(
            (name, count)
            for name, count in container_requests({"resources": pod_level}, is_gpu, parse).items()
            if name in ("cpu", "memory")
        )
    if overhead:
        _add(app, {name: parse(name, v) for name, v in overhead.items() if is_gpu is None or is_gpu(name)})
    return {name: count for name, count in app.items() if count > 0}
