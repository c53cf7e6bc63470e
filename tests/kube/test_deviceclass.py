"""DeviceClass selectors: the CEL subset evaluated on devices as ResourceSlices publish them."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.kube.cel import Device, NotUnderstood, Version, compile_selector, driver_only
from exporter.kube.deviceclass import class_record, resource_of
from exporter.kube.transform import device_view

NV = "gpu.nvidia.com"
H100 = Device(
    NV,
    {
        NV: {
            "type": "gpu",
            "productName": "NVIDIA H100 80GB HBM3",
            "index": 0,
            "cudaComputeCapability": Version("9.0"),
        },
        "resource.kubernetes.io": {"pcieRoot": "pci0000:00"},
    },
    {NV: {"memory": Decimal(80 * 2**30)}},
)


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        # NVIDIA's k8s-dra-driver-gpu classes (gpu.nvidia.com, mig.nvidia.com)
        ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", True),
        ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'", False),
        ('"gpu.nvidia.com" == device.driver', True),
        ('device.attributes["gpu.nvidia.com"]["productName"] == "NVIDIA H100 80GB HBM3"', True),
        ('device.attributes["gpu.nvidia.com"].productName != "NVIDIA H100 80GB HBM3"', False),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("80Gi"))', False),
        ('device.capacity["gpu.nvidia.com"].memory.isLessThan(quantity("81Gi"))', True),
        ('device.capacity["gpu.nvidia.com"].memory == quantity("80Gi")', True),
        ('device.attributes["gpu.nvidia.com"].index < 1 && device.attributes["gpu.nvidia.com"].index >= 0', True),
        ('!(device.attributes["gpu.nvidia.com"].type == "mig")', True),
        ('device.driver == "a.example.com" || device.driver == "gpu.nvidia.com"', True),
        ('(device.driver == "a.example.com") || (device.attributes["gpu.nvidia.com"].index == 1)', False),
        ('"model" in device.attributes["gpu.nvidia.com"]', False),
        ('"productName" in device.attributes["gpu.nvidia.com"]', True),
        ('device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:00"', True),
        # CEL runtime errors select nothing; && and || absorb them as CEL does
        ('device.attributes["gpu.nvidia.com"].model == "h100"', False),  # no such attribute
        ('device.attributes["gpu.nvidia.com"].model == "h100" || device.driver == "gpu.nvidia.com"', True),
        ('device.attributes["gpu.nvidia.com"].model == "h100" && device.driver == "x"', False),
        ('device.attributes["gpu.nvidia.com"].index == "0"', False),  # heterogeneous equality is false
        ('device.attributes["gpu.nvidia.com"].index < "1"', False),  # an ordering across types: an error
        ('device.capacity["gpu.nvidia.com"].memory > quantity("1Gi")', False),  # quantities order via compareTo
        ('device.attributes["gpu.nvidia.com"].cudaComputeCapability == "9.0"', False),  # a version, not a string
        ("device.attributes['x'].name == 'a && device.driver == \"b\"'", False),  # inside a string literal
    ],
)
def test_the_subset_on_an_h100(expression: str, selected: bool) -> None:
    assert compile_selector(expression).selects(H100) is selected


@pytest.mark.parametrize(
    "expression",
    [
        'device.driver.startsWith("gpu")',
        'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0"))',
        'device.attributes["gpu.nvidia.com"].index + 1 == 2',
        'device.attributes["gpu.nvidia.com"].index == 1 ? true : false',
        "device.attributes['gpu.nvidia.com'].exists(a, a == 'x')",
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("lots")) > 0',
        "1.5 == 1.5",
        "node.name == 'x'",
        "device.driver == r'x'",
        'device.driver == "x" &&',
    ],
)
def test_anything_else_is_not_understood(expression: str) -> None:
    with pytest.raises(NotUnderstood):
        compile_selector(expression)


def test_driver_only_expressions() -> None:
    assert driver_only('device.driver == "gpu.example.com"') == "gpu.example.com"
    assert driver_only("('gpu.example.com' == device.driver)") == "gpu.example.com"
    assert driver_only('device.driver == "a" && device.attributes["a"].type == "gpu"') is None


def dc(name: str, *expressions: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]}}


def test_class_records_and_the_resource_they_stand_for() -> None:
    driver_class = class_record(dc("gpu.example.com", 'device.driver == "gpu.example.com"'))
    assert (driver_class.driver, driver_class.resource, driver_class.understood) == (
        "gpu.example.com",
        "gpu.example.com",
        True,
    )
    model = class_record(
        dc(
            "h100",
            'device.driver == "gpu.nvidia.com"',
            'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"',
        )
    )
    assert (model.driver, model.resource, model.selects(H100)) == (None, "h100", True)
    odd = class_record(dc("odd", 'device.driver.startsWith("gpu")'))
    assert not odd.understood and "startsWith" in odd.problem
    classes = {"gpu.example.com": driver_class, "h100": model, "odd": odd}
    assert [resource_of(c, classes) for c in ("gpu.example.com", "h100", "odd", "unknown")] == [
        "gpu.example.com",
        "h100",
        None,  # never guessed
        "unknown",  # not (yet) known: under its own name, as before
    ]
    everything = class_record({"metadata": {"name": "any"}, "spec": {}})
    assert everything.understood and everything.resource == "any" and everything.selects(H100)


def test_device_view_reads_the_v1_slice_shape() -> None:
    """resource.k8s.io/v1: attributes and capacity on the device; qualified names carry their domain."""
    device = {
        "name": "gpu-0",
        "attributes": {
            "type": {"string": "gpu"},
            "index": {"int": 0},
            "uuid": {"string": "GPU-1"},
            "driverVersion": {"version": "580.82.7"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
            "healthy": {"bool": True},
        },
        "capacity": {"memory": {"value": "80Gi"}, "example.com/slots": {"value": "4"}},
    }
    view = device_view(device, NV)
    assert view.attributes == {
        NV: {"type": "gpu", "index": 0, "uuid": "GPU-1", "driverVersion": Version("580.82.7"), "healthy": True},
        "resource.kubernetes.io": {"pcieRoot": "pci0000:00"},
    }
    assert view.capacity == {NV: {"memory": Decimal(80 * 2**30)}, "example.com": {"slots": Decimal(4)}}
    with pytest.raises(ValueError, match="without a value"):
        device_view({"name": "x", "attributes": {"a": {}}}, NV)


def test_has_guards_a_missing_attribute() -> None:
    assert compile_selector('has(device.attributes["gpu.nvidia.com"].productName)').selects(H100)
    assert not compile_selector('has(device.attributes["gpu.nvidia.com"].model)').selects(H100)
    guarded = 'has(device.attributes["gpu.nvidia.com"].model) && device.attributes["gpu.nvidia.com"].model == "x"'
    assert not compile_selector(guarded).selects(H100)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dra"
EXAMPLE_DRIVER = "gpu.example.com"


def test_the_example_drivers_selectors_on_the_devices_it_publishes() -> None:
    """kubernetes-sigs/dra-example-driver's CEL selector demo, unmodified, on its GPU profile's devices."""
    documents = list(yaml.safe_load_all((FIXTURES / "dra-example-driver" / "cel-selector.yaml").read_text()))
    (template,) = [d for d in documents if d and d["kind"] == "ResourceClaimTemplate"]
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    expressions = [s["cel"]["expression"] for s in request["exactly"]["selectors"]]
    assert len(expressions) == 2
    published: dict[str, Any] = {  # internal/profiles/gpu/gpu.go: what the driver's ResourceSlice carries per GPU
        "name": "gpu-0",
        "attributes": {
            "index": {"int": 0},
            "uuid": {"string": "gpu-18db0e85-99e9-c746-8531-ffeb86328b39"},
            "model": {"string": "LATEST-GPU-MODEL"},
            "driverVersion": {"version": "1.0.0"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
    selectors = [compile_selector(e) for e in expressions]
    assert all(s.selects(device_view(published, EXAMPLE_DRIVER)) for s in selectors)
    small = {**published, "capacity": {"memory": {"value": "2Gi"}}}
    older = {**published, "attributes": {**published["attributes"], "model": {"string": "OLD-GPU"}}}
    assert [s.selects(device_view(small, EXAMPLE_DRIVER)) for s in selectors] == [True, False]
    assert [s.selects(device_view(older, EXAMPLE_DRIVER)) for s in selectors] == [False, True]
    # another driver's device with the same attribute names is in another domain
    assert not any(s.selects(device_view(published, "gpu.nvidia.com")) for s in selectors)
