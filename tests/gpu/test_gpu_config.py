"""The gpu section's keys for per-pod memory and idle assignments: defaults, and clear errors for bad values."""

from __future__ import annotations

import pytest

from exporter import config


def test_defaults_read_the_containers_own_proc_and_wait_half_an_hour() -> None:
    gpu = config.parse("gpu: {enabled: auto}\n").gpu
    assert (gpu.proc_root, gpu.allocated_idle_seconds, gpu.allocated_idle_utilization) == ("/proc", 1800.0, 0.05)


def test_the_host_proc_and_the_idle_thresholds_are_configurable() -> None:
    text = "gpu: {proc_root: /host/proc, allocated_idle_seconds: 600, allocated_idle_utilization: 0.01}\n"
    gpu = config.parse(text).gpu
    assert (gpu.proc_root, gpu.allocated_idle_seconds, gpu.allocated_idle_utilization) == ("/host/proc", 600, 0.01)


def test_out_of_range_idle_settings_are_rejected_by_name() -> None:
    with pytest.raises(config.ConfigError) as err:
        config.parse("gpu: {allocated_idle_seconds: 0, allocated_idle_utilization: 1.5}\n")
    assert err.value.errors == [
        "gpu.allocated_idle_seconds: must be in (0, 604800]",
        "gpu.allocated_idle_utilization: must be in [0, 1)",
    ]
