"""The benchmarks' one timing loop (it imports nothing of the exporter: parse_worker.py picks the revision first)."""

from __future__ import annotations

import time
from collections.abc import Callable


def timings(fn: Callable[[], object], repeat: int, clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Seconds, by `clock`, of each of `repeat` calls of `fn`."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return times
