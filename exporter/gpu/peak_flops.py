"""Peak dense FLOPs per GPU model and precision: the datasheet table (`data/peak_flops.json`) and its lookup.

The table holds each model's dense Tensor Core peak from the vendor's datasheet, named there per entry (never
the with-sparsity figure: where a datasheet prints only that, the dense figure is half of it, and the entry
says so). A GPU is matched by the exact name NVML reports; a name the table lacks gets no figure (the GPU
collector reports it as `llm_gpu_field_unavailable{field="peak_flops",reason="not_in_table"}`), never a guess
from a similar name: an A10G is not an A10, an H100 PCIe is not an H100 SXM.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

PRECISIONS = ("fp4", "fp8", "fp16", "bf16", "tf32")
FIELD, NOT_IN_TABLE = "peak_flops", "not_in_table"  # how a model missing from the table is reported
LEGACY_PREFIX = "NVIDIA "  # older drivers name A100s "A100-SXM4-40GB"


@dataclass(frozen=True)
class PeakFlops:
    model: str
    datasheet: str
    dense_from: str
    flops: MappingProxyType[str, float]  # precision → floating point operations per second


class TableError(ValueError):
    """The packaged table is malformed (a test runs `parse` on it)."""


def parse(data: Any) -> dict[str, PeakFlops]:
    """NVML name → the entry of its model; raises TableError naming every bad entry."""
    errors: list[str] = []
    out: dict[str, PeakFlops] = {}
    for i, entry in enumerate(data.get("models", []) if isinstance(data, dict) else []):
        where = f"models[{i}]"
        flops = entry.get("flops", {}) if isinstance(entry, dict) else {}
        bad = [p for p, v in flops.items() if p not in PRECISIONS or not isinstance(v, (int, float)) or v <= 0]
        errors += [f"{where}.flops.{p}: not a precision with a positive figure" for p in bad]
        names = entry.get("nvml_names", []) if isinstance(entry, dict) else []
        if not names or not flops or not entry.get("datasheet") or not entry.get("dense_from"):
            errors.append(f"{where}: needs nvml_names, flops, datasheet and dense_from")
            continue
        peak = PeakFlops(
            str(entry.get("model", "")),
            str(entry["datasheet"]),
            str(entry["dense_from"]),
            MappingProxyType({p: float(flops[p]) for p in PRECISIONS if p in flops}),
        )
        for name in names:
            if name in out:
                errors.append(f"{where}.nvml_names: {name!r} already belongs to {out[name].model}")
            out[name] = peak
    if errors:
        raise TableError("; ".join(errors))
    return out


@cache
def table() -> dict[str, PeakFlops]:
    text = resources.files("exporter.gpu").joinpath("data/peak_flops.json").read_text()
    return parse(json.loads(text))


def lookup(name: str) -> PeakFlops | None:
    """The entry for the GPU NVML names `name`, or None for a model the table does not hold."""
    known = table()
    found = known.get(name)
    if found is None and not name.startswith(LEGACY_PREFIX):
        found = known.get(LEGACY_PREFIX + name)
    return found
