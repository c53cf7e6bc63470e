"""Run in a child process that loads the stub libnvidia-ml.so.1 (LD_LIBRARY_PATH): the real GPU collector
beside a collector that always answers, while the stub's NVML calls block on demand. Prints one JSON line."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from exporter.catalogue import engine
from exporter.collect import CollectorSet
from exporter.config import Gpu
from exporter.exposition import Family, render
from exporter.gpu.collector import GpuCollector, build_gpu_collectors


class Answering:
    name = "answering"

    def collect(self) -> list[Family]:
        family = Family(engine.ENGINE_UP)
        family.add(("ns", "p", "vllm"), 1)
        return [family]


def scrape(collectors: CollectorSet, budget: float) -> dict[str, object]:
    start = time.monotonic()
    text = render(collectors.collect(budget))
    threads = sum(t.name == "collect-gpu" for t in threading.enumerate())
    return {"text": text, "seconds": time.monotonic() - start, "gpu_threads": threads}


def main(block_file: str) -> None:
    gpu = build_gpu_collectors(Gpu(enabled="true", pod_resources_socket="/nonexistent/kubelet.sock"))[0]
    assert isinstance(gpu, GpuCollector)
    gpu.start()
    collectors = CollectorSet([gpu, Answering()])
    out = {"before": scrape(collectors, 2.0)}
    Path(block_file).touch()  # from now on every NVML device call hangs
    out["blocked"] = scrape(collectors, 0.5)
    out["still_blocked"] = scrape(collectors, 0.5)
    out["in_flight"] = {"names": collectors.in_flight()}
    os.unlink(block_file)  # the driver answers again: the hung run ends, the next scrape starts afresh
    time.sleep(0.3)
    out["after"] = scrape(collectors, 2.0)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
