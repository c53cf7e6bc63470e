"""DRA capacity: devices published in ResourceSlices minus devices allocated in ResourceClaims.

Per (driver, pool) only the slices of the newest `pool.generation` count (a driver bumps it when it
republishes; older slices are being replaced). A device is busy when a claim's allocation names it, or
when an allocated device consumes one of the same shared counter sets (partitionable devices: a MIG
partition in use makes its whole GPU unavailable). `adminAccess` results consume nothing (dropped in
`transform.claim_record`). Each device is counted under the resources of the DeviceClasses that select
it (`deviceclass.py`): a selective class's name, the driver's name for a driver-only class and for devices
no understood class selects. Under the driver's name, devices of `type` "mig" are partitions of a GPU,
not GPUs: they are not counted (their GPU is, and is busy while one is allocated); a class that selects
partitions counts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from exporter.kube.deviceclass import DeviceClassRecord
from exporter.kube.records import ClaimRecord, DeviceRecord, SliceRecord

PARTITION_TYPES = frozenset({"mig"})


def newest_slices(slices: Iterable[SliceRecord]) -> list[SliceRecord]:
    newest: dict[tuple[str, str], int] = {}
    kept: list[SliceRecord] = []
    for s in slices:
        key = (s.driver, s.pool)
        newest[key] = max(newest.get(key, s.generation), s.generation)
        kept.append(s)
    return [s for s in kept if s.generation == newest[(s.driver, s.pool)]]


def allocated_devices(claims: Iterable[ClaimRecord]) -> set[tuple[str, str, str]]:
    return {result for claim in claims for result in claim.allocated}


def device_resources(driver: str, device: DeviceRecord, classes: list[DeviceClassRecord]) -> tuple[str, ...]:
    """The resources `device` is counted under (empty: a partition that no selective class selects)."""
    out: set[str] = set()
    by_driver = False
    for device_class in classes:
        if device_class.selects(device.device):
            if device_class.driver is None:
                out.add(device_class.name)
            else:
                by_driver = True
    if (by_driver or not out) and device.kind not in PARTITION_TYPES:
        out.add(driver)
    return tuple(sorted(out))


def _matched(s: SliceRecord, classes: list[DeviceClassRecord]) -> list[tuple[str, ...]]:
    identity = tuple(id(c) for c in classes)
    if s.matched is None or s.matched[0] != identity:
        s.matched = (identity, [device_resources(s.driver, d, classes) for d in s.devices])
    return s.matched[1]


def dra_capacity(
    slices: Iterable[SliceRecord],
    claims: Iterable[ClaimRecord],
    classes: Mapping[str, DeviceClassRecord] | None = None,
) -> dict[tuple[str, str], list[int]]:
    """(node, resource) → [devices, busy devices]."""
    understood = [c for _, c in sorted((classes or {}).items()) if c.understood]
    allocated = allocated_devices(claims)
    current = newest_slices(slices)
    # counter sets consumed by allocated devices, per pool: partitions sharing them are unavailable
    busy_sets: set[tuple[str, str, str]] = set()
    for s in current:
        for device in s.devices:
            if (s.driver, s.pool, device.name) in allocated:
                busy_sets.update((s.driver, s.pool, c) for c in device.counter_sets)
    out: dict[tuple[str, str], list[int]] = {}
    for s in current:
        for device, resources in zip(s.devices, _matched(s, understood), strict=True):
            taken = (s.driver, s.pool, device.name) in allocated or any(
                (s.driver, s.pool, c) in busy_sets for c in device.counter_sets
            )
            for resource in resources:
                counts = out.setdefault((s.node, resource), [0, 0])
                counts[0] += 1
                counts[1] += taken
    return out
