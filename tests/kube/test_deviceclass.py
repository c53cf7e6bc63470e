"""DeviceClass → driver from the CEL selectors, on the classes real drivers ship."""

from __future__ import annotations

import pytest

from exporter.kube.deviceclass import class_driver, driver_of_expression


@pytest.mark.parametrize(
    ("expression", "driver"),
    [
        # NVIDIA's k8s-dra-driver-gpu classes (gpu.nvidia.com, mig.nvidia.com)
        ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", "gpu.nvidia.com"),
        ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'", "gpu.nvidia.com"),
        ('device.driver == "gpu.example.com"', "gpu.example.com"),  # the example driver's class
        ('"gpu.example.com" == device.driver', "gpu.example.com"),
        (
            '(device.driver == "a.example.com") && device.capacity["a.example.com"].memory >= quantity("8Gi")',
            "a.example.com",
        ),
        ('device.driver == "a.example.com" || device.driver == "b.example.com"', None),  # either: not one driver
        ('device.attributes["gpu.nvidia.com"].type == "gpu"', None),
        ('device.driver.startsWith("gpu")', None),
        ("device.attributes['x'].name == 'a && device.driver == \"b\"'", None),  # inside a string literal
    ],
)
def test_driver_of_expression(expression: str, driver: str | None) -> None:
    assert driver_of_expression(expression) == driver


def test_a_class_without_a_driver_comparison_keeps_its_name() -> None:
    selectors = [{"cel": {"expression": 'device.attributes["x"].model == "H100"'}}]
    assert class_driver({"metadata": {"name": "h100"}, "spec": {"selectors": selectors}}) == "h100"
    assert class_driver({"metadata": {"name": "any"}, "spec": {}}) == "any"


def test_the_driver_may_come_from_any_selector() -> None:
    selectors = [
        {"cel": {"expression": "device.attributes['x'].a == 1"}},
        {"cel": {"expression": "device.driver == 'x'"}},
    ]
    assert class_driver({"metadata": {"name": "c"}, "spec": {"selectors": selectors}}) == "x"
