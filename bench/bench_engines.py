"""Parse + map + render cost per engine body, next to vLLM's recorded body (the figure to stay within).

    python bench/bench_engines.py [--repeat 100]

Engine bodies: each engine's newest release with every default family, generated from its release table
(tests/engines/engine_bodies.py), mapped with detection from the body as an `auto` target is.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import timings

from exporter.engines import mapping, registry
from exporter.engines.collector import Outcome, build_families
from exporter.engines.targets import from_url
from exporter.exposition import render
from tests.engines.engine_bodies import body

VLLM = (Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vllm" / "0.32.0.prom").read_text()


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    return statistics.median(timings(fn, repeat)) * 1e3


def run(text: str, version: str | None) -> Callable[[], object]:
    def once() -> str:
        engine = registry.detect(text) or registry.get("vllm")
        target = from_url("http://10.0.0.1:8000", "ns", "pod", engine.name)
        mapped = mapping.map_body(text, target.identity, version, engine.releases(), engine=engine)
        return render(build_families([Outcome(target, mapped, "", 0.0, engine.name)]))

    return once


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=100)
    repeat = parser.parse_args().repeat
    reference = median_ms(run(VLLM, "0.32.0"), repeat)
    print(f"{'engine':>9} {'release':>10} {'KB':>5} {'ms':>7} {'vs vLLM':>8}")
    print(f"{'vllm':>9} {'0.32.0':>10} {len(VLLM) // 1024:5d} {reference:7.3f} {1.0:7.2f}x")
    for name in registry.NAMES:
        if name == "vllm":
            continue
        newest = registry.get(name).releases().newest.version
        text = body(name, newest)
        took = median_ms(run(text, None if name in ("llamacpp", "lmdeploy") else newest), repeat)
        print(f"{name:>9} {newest:>10} {len(text) // 1024:5d} {took:7.3f} {took / reference:7.2f}x")


if __name__ == "__main__":
    main()
