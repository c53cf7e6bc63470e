"""Accelerator kinds: which resources are accelerators, and the taint keys that mark their nodes."""

from __future__ import annotations

import pytest

from exporter.k8s import accelerators


@pytest.mark.parametrize(
    ("resource", "kind"),
    [
        ("nvidia.com/gpu", "nvidia"),
        ("nvidia.com/gpu.shared", "nvidia"),
        ("nvidia.com/mig-1g.10gb", "nvidia"),
        ("amd.com/gpu", "amd"),
        ("gpu.intel.com/i915", "intel-gpu"),
        ("gpu.intel.com/xe", "intel-gpu"),
        ("habana.ai/gaudi", "gaudi"),
        ("aws.amazon.com/neuron", "neuron"),
        ("aws.amazon.com/neuroncore", "neuron"),
        ("aws.amazon.com/neurondevice", "neuron"),
        ("google.com/tpu", "tpu"),
        ("gpu.intel.com/millicores", None),  # a share of an i915 device, requested beside it
        ("nvidia.com/gpumem", None),  # HAMi: memory of a GPU, not a device
        ("cpu", None),
        ("example.com/fpga", None),
    ],
)
def test_kinds(resource: str, kind: str | None) -> None:
    assert accelerators.kind_of(resource) == kind


def test_taint_keys_follow_the_accelerators_requested() -> None:
    assert accelerators.taint_keys(["aws.amazon.com/neuroncore"]) == {
        "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice", "sku", "gpu"
    }  # fmt: skip
    assert accelerators.taint_keys(["nvidia.com/mig-1g.10gb"]) == {
        "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb", "sku", "gpu"
    }  # fmt: skip
    assert "nvidia.com/gpu" not in accelerators.taint_keys(["amd.com/gpu"])
    assert {"amd.com/gpu", "habana.ai/gaudi", "google.com/tpu", "gpu.intel.com/xe"} <= accelerators.ALL_TAINT_KEYS


def test_requested() -> None:
    resources = {"limits": {"nvidia.com/gpu": "2", "memory": "8Gi"}, "requests": {"cpu": "4", "nvidia.com/gpu": 2}}
    assert accelerators.requested(resources) == {"nvidia.com/gpu": 2.0}
    assert accelerators.requested({"limits": "lots"}) == {}
