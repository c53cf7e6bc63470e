"""Pure GPU logic: peak bandwidth, GPM sampling windows, device-ID attribution."""

from __future__ import annotations

import pytest

from exporter.gpu.attribution import PodGpu, attribute, device_key
from exporter.gpu.bandwidth import peak_bytes_per_second
from exporter.gpu.fields import Field
from exporter.gpu.gpm import GpmSampler
from exporter.sources.nvml import Handle, NvmlErrorKind, Sample
from exporter.sources.podresources import ContainerDevices
from tests.gpu.fake_nvml import FakeGpu, FakeNvml
from tests.gpu.gpu_helpers import UUID0, UUID1, Clock


@pytest.mark.parametrize(
    ("clock_mhz", "bus_bits", "expected"),
    [
        (2619, 5120, 3.35232e12),  # H100 SXM: 3.35 TB/s
        (1593, 5120, 2.03904e12),  # A100 80GB: 2.04 TB/s
        (5001, 256, 3.20064e11),  # T4: 320 GB/s
        (9751, 384, 9.36096e11),  # RTX 3090: 936 GB/s
    ],
)
def test_peak_bandwidth_matches_spec_sheets(clock_mhz: int, bus_bits: int, expected: float) -> None:
    assert peak_bytes_per_second(clock_mhz, bus_bits) == pytest.approx(expected, rel=1e-12)


def test_peak_bandwidth_refuses_a_zero_configuration() -> None:
    with pytest.raises(ValueError, match="not a memory configuration"):
        peak_bytes_per_second(0, 5120)


def _sampler(clock: Clock) -> tuple[GpmSampler, FakeNvml, Handle]:
    nvml = FakeNvml([FakeGpu(UUID0)])
    return GpmSampler(nvml, clock=clock), nvml, Handle(nvml.gpus[0])


def test_gpm_first_read_has_no_value_then_rates_from_consecutive_samples(clock: Clock) -> None:
    sampler, nvml, handle = _sampler(clock)

    def take(sample: Sample) -> None:
        nvml.gpm_sample_get(handle, sample)

    assert sampler.read(UUID0, take) == {}  # one sample: no rate yet, and no fake one
    clock.advance(15)
    assert sampler.read(UUID0, take) == {Field.BANDWIDTH_UTILIZATION: 0.425, Field.SM_OCCUPANCY: 0.3025}
    clock.advance(15)
    sampler.read(UUID0, take)
    assert nvml.calls["gpm_sample_get"] == 3 and nvml.calls["gpm_metrics"] == 2
    assert nvml.calls["gpm_sample_alloc"] == 2  # the two buffers are reused, never reallocated


def test_gpm_read_within_100ms_reuses_the_last_result(clock: Clock) -> None:
    sampler, nvml, handle = _sampler(clock)

    def take(sample: Sample) -> None:
        nvml.gpm_sample_get(handle, sample)

    sampler.read(UUID0, take)
    clock.advance(0.05)
    assert sampler.read(UUID0, take) == {}  # still too soon for a first rate
    clock.advance(0.1)
    first = sampler.read(UUID0, take)
    assert first
    clock.advance(0.08)
    assert sampler.read(UUID0, take) is first
    assert nvml.calls["gpm_sample_get"] == 2  # the too-soon reads took no sample


def test_gpm_per_metric_failure_is_reported_for_that_metric_only(clock: Clock) -> None:
    sampler, nvml, handle = _sampler(clock)
    del nvml.gpus[0].gpm_values[3]  # SM occupancy not available on this device

    def take(sample: Sample) -> None:
        nvml.gpm_sample_get(handle, sample)

    sampler.read(UUID0, take)
    clock.advance(1)
    assert sampler.read(UUID0, take) == {
        Field.BANDWIDTH_UTILIZATION: 0.425,
        Field.SM_OCCUPANCY: NvmlErrorKind.NOT_SUPPORTED,
    }


def test_gpm_sample_failure_forgets_the_device_and_frees_its_buffers(clock: Clock) -> None:
    sampler, nvml, handle = _sampler(clock)

    def take(sample: Sample) -> None:
        nvml.gpm_sample_get(handle, sample)

    sampler.read(UUID0, take)
    nvml.gpus[0].lost = True
    clock.advance(1)
    with pytest.raises(Exception, match="gpu_lost"):
        sampler.read(UUID0, take)
    assert len(sampler) == 0 and nvml.live_samples() == 0


@pytest.mark.parametrize(
    ("device_id", "resource", "expected"),
    [
        ("GPU-8f2c", "nvidia.com/gpu", ("uuid", "GPU-8f2c")),
        ("MIG-77aa", "nvidia.com/mig-1g.10gb", ("uuid", "MIG-77aa")),
        ("GPU-8f2c::3", "nvidia.com/gpu.shared", ("uuid", "GPU-8f2c")),  # time-slicing replica
        ("MIG-77aa::0", "nvidia.com/gpu", ("uuid", "MIG-77aa")),
        ("1", "nvidia.com/gpu", ("index", "1")),  # deviceIDStrategy=index
        ("1::2", "nvidia.com/gpu", ("index", "1")),
        ("1", "example.com/fpga", None),  # another plugin's index: not ours to name
        ("nvidia0/gi0", "nvidia.com/gpu", None),  # GKE's naming: unknown here
        ("0000:3b:00.0", "nvidia.com/gpu", None),
    ],
)
def test_device_key(device_id: str, resource: str, expected: tuple[str, str] | None) -> None:
    assert device_key(device_id, resource) == expected


def test_attribute_maps_uuids_indices_mig_and_time_slicing() -> None:
    devices = {UUID0: "0", UUID1: "1", "MIG-77aa": "1"}
    assignments = [
        ContainerDevices("ml", "llama-0", "vllm", "nvidia.com/gpu", (UUID0,)),
        ContainerDevices("ml", "small-0", "vllm", "nvidia.com/mig-1g.10gb", ("MIG-77aa",)),
        # two replicas of one GPU to the same container: one series
        ContainerDevices("ml", "shared-0", "app", "nvidia.com/gpu.shared", (f"{UUID1}::0", f"{UUID1}::4")),
        ContainerDevices("ml", "shared-1", "app", "nvidia.com/gpu.shared", (f"{UUID1}::1",)),
        ContainerDevices("batch", "idx-0", "job", "nvidia.com/gpu", ("0",)),
        ContainerDevices("other", "elsewhere", "c", "nvidia.com/gpu", ("GPU-not-on-this-node",)),
        ContainerDevices("net", "sriov", "c", "intel.com/sriov", ("0000:3b:00.0",)),
    ]
    assert attribute(assignments, devices) == [
        PodGpu("", "GPU-not-on-this-node", "other", "elsewhere", "c"),
        PodGpu("0", UUID0, "batch", "idx-0", "job"),
        PodGpu("0", UUID0, "ml", "llama-0", "vllm"),
        PodGpu("1", UUID1, "ml", "shared-0", "app"),
        PodGpu("1", UUID1, "ml", "shared-1", "app"),
        PodGpu("1", "MIG-77aa", "ml", "small-0", "vllm"),
    ]


def test_attribute_without_nvml_still_names_uuids() -> None:
    assignments = [ContainerDevices("ml", "p", "c", "nvidia.com/gpu", (UUID0, "2"))]
    assert attribute(assignments, {}) == [PodGpu("", UUID0, "ml", "p", "c"), PodGpu("2", "", "ml", "p", "c")]
