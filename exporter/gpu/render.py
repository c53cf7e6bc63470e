"""GPU readings → metric families (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.catalogue import gpu as cat
from exporter.exposition import Family
from exporter.gpu import peak_flops
from exporter.gpu.fields import EXTRA_LABEL, SPECS, Field
from exporter.gpu.readings import DeviceReading, MigReading
from exporter.gpu.xid import XidView
from exporter.sources.nvml import NvmlErrorKind


def families(
    readings: Sequence[DeviceReading], driver_version: str, node: str, xid: XidView | None = None
) -> list[Family]:
    """The GPU families of one scrape on `node`, in catalogue order; each family lists devices in NVML index
    order. `xid`: the event thread's counts (None: XIDs are not watched, no series and no unavailability)."""
    info, up, gpm = Family(cat.GPU_INFO), Family(cat.GPU_UP), Family(cat.GPM_SUPPORTED)
    mig_info, unavailable = Family(cat.MIG_INFO), Family(cat.FIELD_UNAVAILABLE)
    peak = Family(cat.PEAK_FLOPS)
    shared: dict[str, Family] = {}  # fields that share a family (ECC types, remap states) share one object
    by_field = {f: shared.setdefault(spec.name, Family(spec)) for f, spec in SPECS.items()}
    for r in readings:
        if xid is not None and r.up and (state := xid.state(r.uuid)) is not None:
            r.errors[Field.XID_ERRORS] = state
        key = (node, r.gpu, r.uuid)
        up.add(key, 1.0 if r.up else 0.0)
        if r.up:
            info.add((*key, r.name, driver_version, r.mig_mode), 1.0)
            _peak(peak, unavailable, key, r.name)
        if r.gpm_supported is not None:
            gpm.add(key, 1.0 if r.gpm_supported else 0.0)
        _values(by_field, unavailable, key, r.values, r.errors)
        for m in r.migs:
            _mig(node, m, by_field, mig_info, unavailable)
    return [info, up, *shared.values(), peak, gpm, mig_info, _xid_counts(readings, node, xid), unavailable]


def _peak(peak: Family, unavailable: Family, key: tuple[str, str, str], name: str) -> None:
    """The datasheet's peak FLOPs of the GPU's model, one series per precision; a model the table does not
    hold is reported unavailable (not_in_table), so an MFU that cannot be computed is visible and counted."""
    found = peak_flops.lookup(name)
    if found is None:
        unavailable.add((*key, peak_flops.FIELD, peak_flops.NOT_IN_TABLE), 1.0)
        return
    for precision, flops in found.flops.items():
        peak.add((*key, precision), flops)


def _xid_counts(readings: Sequence[DeviceReading], node: str, xid: XidView | None) -> Family:
    family = Family(cat.XID_ERRORS)
    if xid is None:
        return family
    index = {r.uuid: r.gpu for r in readings if r.uuid}
    index.update((m.uuid, m.gpu) for r in readings for m in r.migs)
    for (uuid, number), count in sorted(xid.counts.items(), key=lambda kv: (index.get(kv[0][0], ""), kv[0])):
        if uuid in index:
            family.add((node, index[uuid], uuid, str(number)), float(count))
    return family


def _mig(node: str, m: MigReading, by_field: dict[Field, Family], mig_info: Family, unavailable: Family) -> None:
    key = (node, m.gpu, m.uuid)
    mig_info.add((*key, m.parent_uuid, str(m.gpu_instance_id), str(m.compute_instance_id)), 1.0)
    _values(by_field, unavailable, key, m.values, m.errors)


def _values(
    by_field: dict[Field, Family],
    unavailable: Family,
    key: tuple[str, str, str],
    values: dict[Field, float],
    errors: dict[Field, NvmlErrorKind],
) -> None:
    for f, value in values.items():
        extra = EXTRA_LABEL.get(f)
        by_field[f].add(key if extra is None else (*key, extra), value)
    for f, reason in errors.items():
        unavailable.add((*key, f.value, reason.value), 1.0)
