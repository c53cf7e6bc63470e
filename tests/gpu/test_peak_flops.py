"""The datasheet table of peak dense FLOPs: every model the MFU rule needs, dense figures, exact matching."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from exporter.exposition import render
from exporter.gpu import peak_flops
from exporter.gpu import render as gpu_render
from exporter.gpu.readings import DeviceReading

# the names NVML reports for the models the issue asks for (nvidia-smi --query-gpu=name)
REQUIRED = {
    "NVIDIA H100 80GB HBM3": "H100 SXM",
    "NVIDIA H100 PCIe": "H100 PCIe",
    "NVIDIA H200": "H200 SXM",
    "NVIDIA B200": "B200",
    "NVIDIA A100-SXM4-40GB": "A100 40GB",
    "NVIDIA A100-SXM4-80GB": "A100 80GB",
    "NVIDIA A100 80GB PCIe": "A100 80GB",
    "NVIDIA L4": "L4",
    "NVIDIA L40S": "L40S",
    "NVIDIA A10": "A10",
    "Tesla T4": "T4",
}


def test_every_required_model_is_in_the_table_with_its_datasheet() -> None:
    for name, model in REQUIRED.items():
        found = peak_flops.lookup(name)
        assert found is not None and found.model == model, name
        assert "datasheet" in found.datasheet.lower() and "https://" in found.datasheet
        assert found.dense_from


def test_dense_figures_not_sparsity() -> None:
    h100, a100, l4, t4 = (peak_flops.lookup(n) for n in ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB",
                                                          "NVIDIA L4", "Tesla T4"))  # fmt: skip
    assert h100 is not None and a100 is not None and l4 is not None and t4 is not None
    assert h100.flops["bf16"] == 1979e12 / 2 and h100.flops["fp8"] == 3958e12 / 2  # datasheet prints sparse
    assert a100.flops["bf16"] == 312e12 and "fp8" not in a100.flops  # Ampere has no FP8
    assert l4.flops["fp8"] == 485e12 / 2
    assert dict(t4.flops) == {"fp16": 65e12}  # Turing: no BF16, no sparsity


def test_names_match_exactly_and_the_legacy_prefixless_name() -> None:
    assert peak_flops.lookup("A100-SXM4-40GB") == peak_flops.lookup("NVIDIA A100-SXM4-40GB")
    for near in ("NVIDIA A10G", "NVIDIA H100", "NVIDIA L40", "nvidia l4", ""):
        assert peak_flops.lookup(near) is None, near


def test_the_packaged_table_parses_and_a_bad_one_names_each_fault() -> None:
    raw = json.loads(resources.files("exporter.gpu").joinpath("data/peak_flops.json").read_text())
    assert len(peak_flops.parse(raw)) >= len(REQUIRED)
    bad = {"models": [{"model": "x", "nvml_names": ["X"], "datasheet": "d", "dense_from": "f",
                       "flops": {"fp16": -1, "int8": 5}},
                      {"model": "y", "nvml_names": ["Y"], "flops": {"fp16": 1}}]}  # fmt: skip
    with pytest.raises(peak_flops.TableError) as caught:
        peak_flops.parse(bad)
    text = str(caught.value)
    assert "models[0].flops.fp16" in text and "models[0].flops.int8" in text and "models[1]" in text


def test_a_gpu_outside_the_table_has_no_peak_and_says_so() -> None:
    readings = [
        DeviceReading("0", "GPU-a", True, name="NVIDIA L4"),
        DeviceReading("1", "GPU-b", True, name="NVIDIA A10G"),
        DeviceReading("2", "GPU-c", False),  # lost: neither a figure nor an unavailability of its model
    ]
    text = render(gpu_render.families(readings, "550.54.15", "n"))
    peaks = [line for line in text.splitlines() if line.startswith("llm_gpu_peak_flops{")]
    figures = (("fp8", 242500000000000), ("fp16", 121000000000000), ("bf16", 121000000000000), ("tf32", 6e13))
    assert peaks == [f'llm_gpu_peak_flops{{node="n",gpu="0",uuid="GPU-a",precision="{p}"}} {v:.0f}' for p, v in figures]
    assert 'llm_gpu_field_unavailable{node="n",gpu="1",uuid="GPU-b",field="peak_flops",reason="not_in_table"} 1' in text
    assert 'uuid="GPU-c",field="peak_flops"' not in text
