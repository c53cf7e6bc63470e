"""Run in a child process whose LD_LIBRARY_PATH points at the stub libnvidia-ml.so.1: drives the real GPU
collector (real nvidia-ml-py bindings) and prints each scrape, separated by a line "--- <name>"."""

from __future__ import annotations

import os
import sys
import time

from exporter.collect import CollectorSet
from exporter.config import Gpu
from exporter.exposition import render
from exporter.gpu.collector import GpuCollector, build_gpu_collectors


def main(scenario: str) -> None:
    gpu, _pods = build_gpu_collectors(Gpu(enabled="auto", pod_resources_socket="/nonexistent/kubelet.sock"))
    assert isinstance(gpu, GpuCollector)
    if scenario == "no_nvml":
        out = render(CollectorSet([gpu]).collect())
        print("--- no_nvml")
        print("".join(line for line in out.splitlines(True) if "duration_seconds" not in line), end="")
        return
    gpu.start()  # NVML init and the first GPM sample
    time.sleep(0.15)  # GPM needs samples more than 100 ms apart
    events_file = os.environ.get("STUB_NVML_EVENTS_FILE")
    if events_file:
        with open(events_file, "a") as f:
            f.write(os.environ["SCENARIO_XIDS"].replace(",", "\n") + "\n")  # the driver reports XIDs
        wanted = int(os.environ["SCENARIO_XID_COUNTED"])
        deadline = time.monotonic() + 20
        while _xids_counted(render(gpu.collect())) < wanted and time.monotonic() < deadline:
            time.sleep(0.05)
    print(f"--- {scenario}")
    print(render(gpu.collect()), end="")
    lost_file = os.environ.get("STUB_NVML_LOST_FILE")
    if lost_file:
        with open(lost_file, "w") as f:
            f.write("1\n")  # GPU 1 falls off the bus
        time.sleep(0.15)
        print(f"--- {scenario}_lost")
        print(render(gpu.collect()), end="")
    gpu.close()


def _xids_counted(text: str) -> int:
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines() if line.startswith("llm_gpu_xid"))


if __name__ == "__main__":
    main(sys.argv[1])
