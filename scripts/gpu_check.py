"""Compare the GPU collector's readings with `nvidia-smi -q -x` on a machine with a real NVIDIA GPU.

Run through scripts/gpu-check.sh. Prints one line per comparison:

    PASS  GPU-…  memory_total  exporter=85899345920  nvidia-smi=85899345920
    FAIL  GPU-…  ecc_errors_corrected  exporter=3  nvidia-smi=5
    SKIP  GPU-…  retired_pages_double_bit_ecc  unavailable: not_supported (nvidia-smi: N/A)

and exits 1 when any comparison fails, 2 when nvidia-smi or NVML cannot be run. Quantities that move
between the two readings (memory used, utilisation, power, temperature) are compared within a tolerance;
counts and states exactly. A field the exporter reports unavailable must be N/A in nvidia-smi too.
"""

from __future__ import annotations

import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from exporter.exposition import render
from exporter.gpu.collector import GpuCollector
from exporter.gpu.xid import XidWatcher
from exporter.sources.nvml import PynvmlSource

MIB = 1 << 20


@dataclass
class Reading:
    values: dict[str, float]  # field → value, as the exporter reports it
    unavailable: dict[str, str]  # field → reason


def exporter_readings() -> tuple[dict[str, Reading], dict[str, str]]:
    """uuid → readings of one scrape (after XID registration), and uuid → name."""
    nvml = PynvmlSource()
    watcher = XidWatcher(nvml, ready=lambda: True)
    collector = GpuCollector(nvml, node="gpu-check", xid=watcher)  # not started: no background threads
    collector.collect()  # loads NVML and takes the first GPM samples
    watcher.setup()  # registers every GPU for XID events, here rather than in the watcher's thread
    time.sleep(0.2)  # GPM needs two samples more than 100 ms apart
    text = render(collector.collect())
    watcher.close()
    collector.close()
    out: dict[str, Reading] = {}
    names: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            uuid = s.labels.get("uuid", "")
            if not uuid:
                continue
            r = out.setdefault(uuid, Reading({}, {}))
            key = s.name
            for extra in ("type", "state", "cause"):
                if extra in s.labels:
                    key = f"{s.name}:{s.labels[extra]}"
            if s.name == "llm_gpu_field_unavailable":
                r.unavailable[s.labels["field"]] = s.labels["reason"]
            elif s.name == "llm_gpu_info":
                names[uuid] = s.labels["name"]
                r.values["mig_enabled"] = 1.0 if s.labels["mig_mode"] == "enabled" else 0.0
            else:
                r.values[key] = s.value
    return out, names


def number(text: str | None) -> float | None:
    """`81920 MiB`, `30 %`, `61 C`, `350.12 W`, `Yes`/`No`, `N/A` → a number, or None."""
    if text is None:
        return None
    word = text.strip().split(" ")[0]
    if word in ("Yes", "Enabled"):
        return 1.0
    if word in ("No", "Disabled"):
        return 0.0
    try:
        return float(word)
    except ValueError:
        return None


@dataclass(frozen=True)
class Check:
    field: str  # the exporter's field (llm_gpu_field_unavailable's label) or metric:label
    metric: str  # the exporter's sample key
    smi: Callable[[ET.Element], float | None]  # the nvidia-smi value in the exporter's unit
    tolerance: Callable[[float], float] = lambda _v: 0.0


def _path(path: str, scale: float = 1.0) -> Callable[[ET.Element], float | None]:
    def read(gpu: ET.Element) -> float | None:
        value = number(gpu.findtext(path))
        return None if value is None else value * scale

    return read


def _first(*paths: str, scale: float = 1.0) -> Callable[[ET.Element], float | None]:
    readers = [_path(p, scale) for p in paths]

    def read(gpu: ET.Element) -> float | None:
        for r in readers:
            if (v := r(gpu)) is not None:
                return v
        return None

    return read


def _sum(*paths: str) -> Callable[[ET.Element], float | None]:
    def read(gpu: ET.Element) -> float | None:
        values = [number(gpu.findtext(p)) for p in paths]
        present = [v for v in values if v is not None]
        return sum(present) if present else None

    return read


CHECKS = [
    Check("memory_total", "llm_gpu_memory_total_bytes", _path("fb_memory_usage/total", MIB), lambda v: MIB),
    Check("memory_reserved", "llm_gpu_memory_reserved_bytes", _path("fb_memory_usage/reserved", MIB), lambda v: MIB),
    Check(
        "memory_used", "llm_gpu_memory_used_bytes", _path("fb_memory_usage/used", MIB), lambda v: 0.02 * v + 64 * MIB
    ),
    Check("utilization", "llm_gpu_utilization_ratio", _path("utilization/gpu_util", 0.01), lambda v: 0.15),
    Check("memory_busy", "llm_gpu_memory_busy_ratio", _path("utilization/memory_util", 0.01), lambda v: 0.15),
    Check(
        "power",
        "llm_gpu_power_watts",
        _first("gpu_power_readings/instant_power_draw", "gpu_power_readings/power_draw", "power_readings/power_draw"),
        lambda v: 0.1 * v + 5,
    ),
    Check("temperature", "llm_gpu_temperature_celsius", _path("temperature/gpu_temp"), lambda v: 2),
    # ECC: NVML's total aggregate count (nvidia-smi splits newer GPUs' counts into DRAM and SRAM)
    Check(
        "ecc_errors_corrected",
        "llm_gpu_ecc_errors_total:corrected",
        _first("ecc_errors/aggregate/single_bit/total", "ecc_errors/aggregate/dram_correctable"),
    ),
    Check(
        "ecc_errors_uncorrected",
        "llm_gpu_ecc_errors_total:uncorrected",
        _first(
            "ecc_errors/aggregate/double_bit/total",
            "ecc_errors/aggregate/dram_uncorrectable",
        ),
    ),
    Check("remapped_rows_correctable", "llm_gpu_remapped_rows:correctable", _path("remapped_rows/remapped_row_corr")),
    Check(
        "remapped_rows_uncorrectable", "llm_gpu_remapped_rows:uncorrectable", _path("remapped_rows/remapped_row_unc")
    ),
    Check("row_remap_pending", "llm_gpu_row_remap_pending", _path("remapped_rows/remapped_row_pending")),
    Check("row_remap_failed", "llm_gpu_row_remap_failed", _path("remapped_rows/remapped_row_failure")),
    Check(
        "retired_pages_multiple_single_bit_ecc",
        "llm_gpu_retired_pages:multiple_single_bit_ecc",
        _path("retired_pages/multiple_single_bit_retirement/retired_count"),
    ),
    Check(
        "retired_pages_double_bit_ecc",
        "llm_gpu_retired_pages:double_bit_ecc",
        _path("retired_pages/double_bit_retirement/retired_count"),
    ),
    Check("mig_mode", "mig_enabled", _path("mig_mode/current_mig")),
]
ECC_SRAM = {
    "ecc_errors_corrected": ("ecc_errors/aggregate/sram_correctable",),
    "ecc_errors_uncorrected": (
        "ecc_errors/aggregate/sram_uncorrectable_parity",
        "ecc_errors/aggregate/sram_uncorrectable_secded",
        "ecc_errors/aggregate/sram_uncorrectable",
    ),
}


def _fmt(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.4g}"


def compare(gpu: ET.Element, reading: Reading) -> list[tuple[str, str, str]]:
    """(PASS|FAIL|SKIP, field, detail) for every check of one GPU."""
    out = []
    for c in CHECKS:
        smi = c.smi(gpu)
        mine = reading.values.get(c.metric)
        if c.field in ECC_SRAM and smi is not None and mine is not None and mine != smi:
            # DRAM only in the newer layout; NVML's total may add the SRAM counts
            with_sram = _sum(*ECC_SRAM[c.field])(gpu)
            smi = smi + with_sram if with_sram is not None else smi
        if mine is None:
            reason = reading.unavailable.get(c.field, "absent")
            verdict = "SKIP" if smi is None else "FAIL"
            out.append((verdict, c.field, f"unavailable: {reason} (nvidia-smi: {'N/A' if smi is None else _fmt(smi)})"))
        elif smi is None:
            out.append(("FAIL", c.field, f"exporter={_fmt(mine)}  nvidia-smi=N/A"))
        else:
            ok = abs(mine - smi) <= c.tolerance(smi)
            out.append(("PASS" if ok else "FAIL", c.field, f"exporter={_fmt(mine)}  nvidia-smi={_fmt(smi)}"))
    watched = "xid_errors" not in reading.unavailable
    out.append(
        (
            "PASS" if watched else "SKIP",
            "xid_errors",
            "XID events registered" if watched else f"unavailable: {reading.unavailable['xid_errors']}",
        )
    )
    return out


def main() -> int:
    try:
        smi = subprocess.run(["nvidia-smi", "-q", "-x"], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"nvidia-smi -q -x failed: {exc}", file=sys.stderr)
        return 2
    try:
        readings, names = exporter_readings()
    except Exception as exc:  # noqa: BLE001 - no NVML, no driver: say so and stop
        print(f"the GPU collector could not read NVML: {exc}", file=sys.stderr)
        return 2
    if not readings:
        print("the collector read no GPU (is NVML visible here?)", file=sys.stderr)
        return 2
    root = ET.fromstring(smi.stdout)
    print(f"driver {root.findtext('driver_version')}, {root.findtext('attached_gpus')} GPU(s)")
    failed = 0
    for gpu in root.findall("gpu"):
        uuid = gpu.findtext("uuid") or ""
        print(f"{uuid}  {gpu.findtext('product_name')}  (exporter: {names.get(uuid, 'not seen')})")
        reading = readings.get(uuid)
        if reading is None:
            print(f"FAIL  {uuid}  device  the exporter has no readings of this GPU")
            failed += 1
            continue
        for verdict, field_name, detail in compare(gpu, reading):
            print(f"{verdict}  {uuid}  {field_name}  {detail}")
            failed += verdict == "FAIL"
    print(f"{failed} comparison(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
