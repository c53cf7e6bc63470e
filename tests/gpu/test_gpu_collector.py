"""The GPU collector against the fake NVML: exact exposition, and isolation per GPU and per field."""

from __future__ import annotations

import logging

import pytest

from exporter.collect import CollectorSet, CollectorUnavailable
from exporter.config import Gpu
from exporter.exposition import render
from exporter.gpu.collector import INIT_RETRY_SECONDS, GpuCollector, NvmlRequiredError, build_gpu_collectors
from exporter.sources.nvml import NvmlErrorKind
from tests.gpu.fake_nvml import GIB, FakeGpu, FakeMig, FakeNvml
from tests.gpu.gpu_helpers import UUID0, UUID1, Clock, assert_golden, make_collector, read_golden, two_gpus

HEALTHY = read_golden("fake_two_gpus.prom")  # hand-checked: see the values in conftest.two_gpus


def scrape(collector: GpuCollector) -> str:
    return render(collector.collect())


def lines(text: str) -> set[str]:
    return {line for line in text.splitlines() if not line.startswith("#")}


def primed(nvml: FakeNvml, clock: Clock) -> GpuCollector:
    collector = make_collector(nvml, clock)
    collector.start()  # first GPM sample
    clock.advance(15)
    return collector


def test_two_gpus_exact_exposition(clock: Clock) -> None:
    collector = primed(FakeNvml(two_gpus()), clock)
    assert_golden("fake_two_gpus.prom", scrape(collector))


def test_lost_gpu_reports_up_0_and_the_other_gpu_is_unchanged(clock: Clock) -> None:
    gpus = two_gpus()
    nvml = FakeNvml(gpus)
    collector = primed(nvml, clock)
    before = lines(scrape(collector))
    gpus[0].lost = True
    clock.advance(15)
    after = lines(scrape(collector))
    gpu0 = f'node="gpu-node-0",gpu="0",uuid="{UUID0}"'
    assert after - before == {
        f"llm_gpu_up{{{gpu0}}} 0",
        f'llm_gpu_field_unavailable{{{gpu0},field="device",reason="gpu_lost"}} 1',
    }
    # GPU 1's series are all still there; GPU 0 lost everything but its up series
    assert before - after == {line for line in before if gpu0 in line}
    assert nvml.live_samples() == 0  # GPU 0's GPM buffers were freed, GPU 1 has none (no GPM)


def test_gpu_that_comes_back_reports_again(clock: Clock) -> None:
    gpus = two_gpus()
    collector = primed(FakeNvml(gpus), clock)
    gpus[0].lost = True
    scrape(collector)
    gpus[0].lost = False
    clock.advance(15)
    first = scrape(collector)  # GPM starts over: no rate in the first scrape back
    assert f'llm_gpu_up{{node="gpu-node-0",gpu="0",uuid="{UUID0}"}} 1' in first
    assert "llm_gpu_memory_bandwidth_utilization_ratio" not in first
    clock.advance(15)
    assert scrape(collector) == HEALTHY


@pytest.mark.parametrize(
    ("method", "kind", "gone", "added"),
    [
        # a function missing on an older driver degrades exactly its own series
        ("energy_millijoules", NvmlErrorKind.FUNCTION_NOT_FOUND, ["llm_gpu_energy_joules_total"], ["energy"]),
        ("power_milliwatts", NvmlErrorKind.NOT_SUPPORTED, ["llm_gpu_power_watts"], ["power"]),
        (
            "utilization",
            NvmlErrorKind.NO_PERMISSION,
            ["llm_gpu_utilization_ratio", "llm_gpu_memory_busy_ratio"],
            ["utilization", "memory_busy"],
        ),
        (
            "memory_v2",
            NvmlErrorKind.ERROR,
            ["llm_gpu_memory_total_bytes", "llm_gpu_memory_used_bytes", "llm_gpu_memory_reserved_bytes"],
            ["memory_total", "memory_used", "memory_reserved"],
        ),
        (
            "max_memory_clock_mhz",
            NvmlErrorKind.NOT_SUPPORTED,
            ["llm_gpu_memory_bandwidth_max_bytes_per_second"],
            ["memory_bandwidth_max"],
        ),
    ],
)
def test_one_failing_field_degrades_only_its_series(
    clock: Clock, method: str, kind: NvmlErrorKind, gone: list[str], added: list[str]
) -> None:
    gpus = two_gpus()
    gpus[1].errors[method] = kind
    collector = primed(FakeNvml(gpus), clock)
    out = lines(scrape(collector))
    healthy = lines(HEALTHY)
    gpu1 = f'node="gpu-node-0",gpu="1",uuid="{UUID1}"'
    assert healthy - out == {f"{name}{{{gpu1}}} {_value(name)}" for name in gone}
    assert out - healthy == {f'llm_gpu_field_unavailable{{{gpu1},field="{f}",reason="{kind.value}"}} 1' for f in added}


def _value(name: str) -> str:
    """GPU 1's value of `name` in HEALTHY."""
    (line,) = [x for x in HEALTHY.splitlines() if x.startswith(f'{name}{{node="gpu-node-0",gpu="1"')]
    return line.rsplit(" ", 1)[1]


def test_older_driver_falls_back_to_v1_memory_and_legacy_temperature(clock: Clock) -> None:
    gpus = [FakeGpu(UUID0, gpm=False)]
    missing = NvmlErrorKind.FUNCTION_NOT_FOUND
    gpus[0].errors.update(memory_v2=missing, temperature_celsius=missing, gpm_supported=missing)
    nvml = FakeNvml(gpus)
    out = scrape(primed(nvml, clock))
    key = f'node="gpu-node-0",gpu="0",uuid="{UUID0}"'
    assert f"llm_gpu_memory_used_bytes{{{key}}} {10 * GIB + 512 * (1 << 20)}" in out  # v1 used includes reserved
    assert "llm_gpu_memory_reserved_bytes" not in out
    assert f"llm_gpu_temperature_celsius{{{key}}} 61" in out
    assert f"llm_gpu_gpm_supported{{{key}}} 0" in out  # a driver without GPM functions has no GPM
    unavailable = {x for x in out.splitlines() if x.startswith("llm_gpu_field_unavailable")}
    assert unavailable == {
        f'llm_gpu_field_unavailable{{{key},field="memory_reserved",reason="function_not_found"}} 1',
        f'llm_gpu_field_unavailable{{{key},field="memory_bandwidth_utilization",reason="function_not_found"}} 1',
        f'llm_gpu_field_unavailable{{{key},field="sm_occupancy",reason="function_not_found"}} 1',
        # a Hopper GPU remaps rows and retires no pages, whatever the driver
        f'llm_gpu_field_unavailable{{{key},field="retired_pages_multiple_single_bit_ecc",reason="not_supported"}} 1',
        f'llm_gpu_field_unavailable{{{key},field="retired_pages_double_bit_ecc",reason="not_supported"}} 1',
    }


def test_gpu_without_permission_is_down_with_its_reason(clock: Clock) -> None:
    gpus = two_gpus()
    gpus[1].errors["handle_by_index"] = NvmlErrorKind.NO_PERMISSION
    out = lines(scrape(primed(FakeNvml(gpus), clock)))
    assert 'llm_gpu_up{node="gpu-node-0",gpu="1",uuid=""} 0' in out  # never readable: no UUID to give
    assert 'llm_gpu_field_unavailable{node="gpu-node-0",gpu="1",uuid="",field="device",reason="no_permission"} 1' in out
    assert not any(
        'gpu="1"' in line
        for line in out
        - {
            'llm_gpu_up{node="gpu-node-0",gpu="1",uuid=""} 0',
            'llm_gpu_field_unavailable{node="gpu-node-0",gpu="1",uuid="",field="device",reason="no_permission"} 1',
        }
    )


def test_static_answers_are_read_once(clock: Clock) -> None:
    nvml = FakeNvml(two_gpus())
    collector = primed(nvml, clock)
    for _ in range(3):
        clock.advance(15)
        scrape(collector)
    assert nvml.calls["name"] == 2
    assert nvml.calls["max_memory_clock_mhz"] == 2
    assert nvml.calls["gpm_supported"] == 2
    assert nvml.calls["memory_v2"] == 8  # start + 3 scrapes, 2 GPUs: the dynamic fields every time


def test_mig_instances_report_their_own_memory_and_gpm(clock: Clock) -> None:
    migs = [FakeMig("MIG-aaaa", gpu_instance_id=1), None, FakeMig("MIG-bbbb", gpu_instance_id=2, compute_instance_id=0)]
    gpus = [FakeGpu(UUID0, mig=True, mig_slots=migs)]
    gpus[0].errors["memory_v2"] = NvmlErrorKind.NO_PERMISSION  # parent aggregate needs privileges
    collector = primed(FakeNvml(gpus), clock)
    out = lines(scrape(collector))
    parent = f'node="gpu-node-0",gpu="0",uuid="{UUID0}"'
    expected_mig = set()
    for uuid, gi in (("MIG-aaaa", 1), ("MIG-bbbb", 2)):
        key = f'node="gpu-node-0",gpu="0",uuid="{uuid}"'
        expected_mig |= {
            f'llm_gpu_mig_info{{{key},parent_uuid="{UUID0}",gpu_instance_id="{gi}",compute_instance_id="0"}} 1',
            f"llm_gpu_memory_total_bytes{{{key}}} {20 * GIB}",
            f"llm_gpu_memory_used_bytes{{{key}}} {5 * GIB}",
            f"llm_gpu_memory_reserved_bytes{{{key}}} 0",
            f"llm_gpu_memory_bandwidth_utilization_ratio{{{key}}} 0.2",
            f"llm_gpu_sm_occupancy_ratio{{{key}}} 0.1",
        }
    assert {line for line in out if "MIG-" in line and "field_unavailable" not in line} == (expected_mig)
    info = 'name="NVIDIA H100 80GB HBM3",driver_version="550.54.15",mig_mode="enabled"'
    assert f"llm_gpu_info{{{parent},{info}}} 1" in out
    assert f'llm_gpu_field_unavailable{{{parent},field="utilization",reason="not_supported"}} 1' in out
    assert f'llm_gpu_field_unavailable{{{parent},field="memory_total",reason="no_permission"}} 1' in out
    assert collector.devices() == {UUID0: "0", "MIG-aaaa": "0", "MIG-bbbb": "0"}


def test_mig_instance_removed_frees_its_gpm_samples(clock: Clock) -> None:
    migs: list[FakeMig | None] = [FakeMig("MIG-aaaa", gpu_instance_id=1), FakeMig("MIG-bbbb", gpu_instance_id=2)]
    gpus = [FakeGpu(UUID0, mig=True, mig_slots=migs)]
    nvml = FakeNvml(gpus)
    collector = primed(nvml, clock)
    assert nvml.live_samples() == 6  # parent + 2 instances, two buffers each
    migs[1] = None
    clock.advance(15)
    scrape(collector)
    assert nvml.live_samples() == 4
    collector.close()
    assert nvml.live_samples() == 0
    assert nvml.calls["shutdown"] == 1


def test_without_nvml_the_collector_is_unavailable_and_retries_rarely(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    nvml = FakeNvml(two_gpus(), init_error=NvmlErrorKind.UNAVAILABLE)
    collector = make_collector(nvml, clock)
    collector.start()
    with pytest.raises(CollectorUnavailable, match="NVML not available"):
        collector.collect()
    assert nvml.calls["init"] == 1  # no retry within INIT_RETRY_SECONDS
    out = render(CollectorSet([collector]).collect())
    assert 'llm_exporter_collector_success{collector="gpu"} 0' in out
    assert "llm_gpu_" not in out
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # auto: a fact of the machine
    nvml.init_error = None  # the driver came up
    clock.advance(INIT_RETRY_SECONDS + 1)
    assert 'llm_gpu_up{node="gpu-node-0",gpu="0"' in render(collector.collect())


def test_enabled_true_makes_missing_nvml_a_failure_not_a_fact(clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    collector = make_collector(FakeNvml([], init_error=NvmlErrorKind.UNAVAILABLE), clock, required=True)
    with pytest.raises(NvmlRequiredError, match=r"NVML not available.*\(gpu.enabled: true\)"):
        collector.collect()
    assert [r.levelno for r in caplog.records if "NVML not available" in r.getMessage()] == [logging.ERROR]
    out = render(CollectorSet([collector]).collect())
    # success 0 and unavailable 0: LLMExporterCollectorFailing fires, as it must on a GPU node without NVML
    assert 'llm_exporter_collector_success{collector="gpu"} 0' in out
    assert 'llm_exporter_collector_unavailable{collector="gpu"} 0' in out


def test_build_gpu_collectors() -> None:
    assert build_gpu_collectors(Gpu(enabled="false")) == []
    collectors = build_gpu_collectors(Gpu())
    assert [c.name for c in collectors] == ["gpu", "gpu_pods"]


def test_nvml_errors_mid_run_degrade_the_scrape_then_recover(clock: Clock) -> None:
    nvml = FakeNvml(two_gpus())
    collector = primed(nvml, clock)
    collectors = CollectorSet([collector])
    assert 'llm_gpu_up{node="gpu-node-0",gpu="0"' in render(collectors.collect())
    # a transient NVML error: that scrape fails, visibly; NVML stays loaded
    nvml.count_error = NvmlErrorKind.ERROR
    out = render(collectors.collect())
    assert 'llm_exporter_collector_success{collector="gpu"} 0' in out and "llm_gpu_up" not in out
    nvml.count_error = None
    assert 'llm_gpu_up{node="gpu-node-0",gpu="1"' in render(collectors.collect())
    assert nvml.calls["init"] == 1
    # the driver unloaded under the exporter: unavailable, NVML state and GPM samples dropped
    nvml.count_error = NvmlErrorKind.UNAVAILABLE
    out = render(collectors.collect())
    assert 'llm_exporter_collector_unavailable{collector="gpu"} 1' in out
    assert nvml.live_samples() == 0 and nvml.calls["shutdown"] == 1
    # the driver is back: the next scrape loads NVML again, without waiting for the retry interval
    nvml.count_error = None
    out = render(collectors.collect())
    assert nvml.calls["init"] == 2
    assert 'llm_exporter_collector_success{collector="gpu"} 1' in out and 'llm_gpu_up{node="gpu-node-0",gpu="1"' in out


def test_architecture_bound_unsupported_answers_are_asked_once_and_still_reported(clock: Clock) -> None:
    gpus = two_gpus()
    gpus[1].retired = (2, 1)  # a Volta-like GPU: retires pages, remaps no rows
    gpus[1].errors["remapped_rows"] = NvmlErrorKind.NOT_SUPPORTED
    nvml = FakeNvml(gpus)
    collector = primed(nvml, clock)
    outs = [lines(scrape(collector)) for _ in range(3)]
    assert outs[0] == outs[1] == outs[2]
    # GPU 0 (no page retirement) asked twice at start-up, GPU 1 (retires pages) at every one of 4 scrapes
    assert nvml.calls["retired_pages"] == 2 + 2 * 4
    assert nvml.calls["remapped_rows"] == 4 + 1  # GPU 0 at every scrape, GPU 1 once
    gpu1 = f'node="gpu-node-0",gpu="1",uuid="{UUID1}"'
    assert f'llm_gpu_field_unavailable{{{gpu1},field="row_remap_failed",reason="not_supported"}} 1' in outs[2]
    assert f'llm_gpu_retired_pages{{{gpu1},cause="double_bit_ecc"}} 1' in outs[2]
