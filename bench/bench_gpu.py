"""Cost per scrape of the GPU collector for 8 GPUs, against the stub libnvidia-ml.so.1 and the real bindings.

    .venv/bin/python bench/bench_gpu.py [--scrapes N]

Builds the stub library (tests/gpu/stub_nvml), then re-runs itself in a child process that loads it through
LD_LIBRARY_PATH. The GPM path is timed at every scrape (the stub accepts back-to-back samples, and the
collector's sampler does not wait 100 ms), which is the worst case: a real scrape interval is seconds.

The peer, measured in the same process: the bare pynvml calls the collector makes (the same readings, faults
and compute processes included, without isolation, caching or rendering), so the ratio is the collector's own
overhead. Target: < 5 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPUS = 8
TARGET_MS = 5.0


def timed(fn: Callable[[], object], scrapes: int, rounds: int = 5) -> float:
    """Median over `rounds` of the mean seconds per call of `fn`."""
    fn()  # warm up: the bindings cache their function pointers on first use
    means = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(scrapes):
            fn()
        means.append((time.perf_counter() - start) / scrapes)
    return statistics.median(means)


def child(scrapes: int) -> None:
    import pynvml  # the peer uses the bindings directly

    from exporter.exposition import render
    from exporter.gpu.collector import GpuCollector
    from exporter.gpu.gpm import GpmSampler
    from exporter.sources.nvml import PynvmlSource

    source = PynvmlSource()
    collector = GpuCollector(source, node="gpu-node-0", sampler=GpmSampler(source, min_interval=0.0))
    collector.start()
    text = render(collector.collect())
    gpm_series = text.count("llm_gpu_memory_bandwidth_utilization_ratio{")
    assert text.count("llm_gpu_up{") == GPUS and gpm_series == GPUS, "stub not serving 8 GPM GPUs"

    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    samples = {id(h): [pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()] for h in handles}
    for h in handles:
        pynvml.nvmlGpmSampleGet(h, samples[id(h)][0])

    def bare_calls() -> None:
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            pynvml.nvmlDeviceGetUUID(h)
            pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
            pynvml.nvmlDeviceGetUtilizationRates(h)
            pynvml.nvmlDeviceGetPowerUsage(h)
            pynvml.nvmlDeviceGetTemperatureV(h, pynvml.NVML_TEMPERATURE_GPU)
            pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
            pynvml.nvmlDeviceGetMigMode(h)
            for kind in (pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED):
                pynvml.nvmlDeviceGetTotalEccErrors(h, kind, pynvml.NVML_AGGREGATE_ECC)
            pynvml.nvmlDeviceGetRemappedRows(h)
            for cause in (0, 1):  # Hopper retires no pages: NOT_SUPPORTED, as the collector gets it
                with contextlib.suppress(pynvml.NVMLError):
                    pynvml.nvmlDeviceGetRetiredPages(h, cause)
            pynvml.nvmlDeviceGetComputeRunningProcesses(h)
            pair = samples[id(handles[i])]
            pynvml.nvmlGpmSampleGet(h, pair[1])
            request = pynvml.c_nvmlGpmMetricsGet_t()
            request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = 2
            request.sample1, request.sample2 = pair[0], pair[1]
            request.metrics[0].metricId = pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL
            request.metrics[1].metricId = pynvml.NVML_GPM_METRIC_SM_OCCUPANCY
            pynvml.nvmlGpmMetricsGet(request)
            pair.reverse()

    ours = timed(lambda: render(collector.collect()), scrapes)
    peer = timed(bare_calls, scrapes)
    collector.close()
    verdict = "PASS" if ours * 1e3 < TARGET_MS else "FAIL"
    print(f"GPU collector, {GPUS} GPUs (GPM every scrape), collect + render: {ours * 1e3:.3f} ms/scrape")
    print(f"peer: bare pynvml calls for the same readings:            {peer * 1e3:.3f} ms/scrape")
    print(f"ratio collector / bare calls: {ours / peer:.2f}x")
    print(f"target < {TARGET_MS:.0f} ms per scrape: {verdict}")
    if verdict == "FAIL":
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.scrapes)
        return
    sys.path.insert(0, str(ROOT))
    from tests.gpu import stub_nvml_build

    with tempfile.TemporaryDirectory() as tmp:
        libs = stub_nvml_build.build(Path(tmp))
        env = stub_nvml_build.env_for(libs["full"], gpus=str(GPUS), gpm_min_interval_ns="0")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        cmd = [sys.executable, __file__, "--child", "--scrapes", str(args.scrapes)]
        raise SystemExit(subprocess.run(cmd, env=env, check=False).returncode)


if __name__ == "__main__":
    main()
