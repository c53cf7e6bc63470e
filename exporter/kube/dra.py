"""DRA capacity: devices published in ResourceSlices minus devices allocated in ResourceClaims.

Per (driver, pool) only the slices of the newest `pool.generation` count (a driver bumps it when it
republishes; older slices are being replaced). A device is busy when a claim's allocation names it, or
when an allocated device consumes one of the same shared counter sets (partitionable devices: a MIG
partition in use makes its whole GPU unavailable). `adminAccess` results consume nothing (dropped in
`transform.claim_record`). Devices of `type` "mig" are partitions of a GPU, not GPUs: they are not counted
(their GPU is, and is busy while one is allocated). The resource is reported under the driver's name.
"""

from __future__ import annotations

from collections.abc import Iterable

from exporter.kube.records import ClaimRecord, SliceRecord

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


def dra_capacity(slices: Iterable[SliceRecord], claims: Iterable[ClaimRecord]) -> dict[tuple[str, str], list[int]]:
    """(node, driver) → [devices, busy devices]."""
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
        counts = out.setdefault((s.node, s.driver), [0, 0])
        for device in s.devices:
            if device.kind in PARTITION_TYPES:
                continue
            counts[0] += 1
            taken = (s.driver, s.pool, device.name) in allocated or any(
                (s.driver, s.pool, c) in busy_sets for c in device.counter_sets
            )
            counts[1] += taken
    return out
