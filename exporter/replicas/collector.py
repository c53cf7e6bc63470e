"""The replicas collector (cluster role): engine pods watched, their start-ups turned into histograms.

The pods come from the engine-pod watch it shares with the routes collector (`engine_pods.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from exporter.catalogue import replicas as spec
from exporter.collect import CollectorUnavailable
from exporter.exposition import Family, render_labels
from exporter.replicas import startup
from exporter.sources.kube import Reflector


class ReplicasCollector:
    name = "replicas"

    def __init__(self, reflector: Reflector[startup.PodStart], clock: Callable[[], float] = time.time) -> None:
        self._reflector = reflector
        self._clock = clock
        self._tracker = startup.StartupTracker(started_at=clock())
        self._lock = threading.Lock()  # concurrent scrapes update the tracker one at a time

    def start(self) -> None:
        self._reflector.start()

    def close(self) -> None:
        self._reflector.stop()

    def ready(self) -> bool:
        return self._reflector.synced()

    def collect(self) -> Iterable[Family]:
        if not self._reflector.synced():
            raise CollectorUnavailable("waiting for the first full list of pods")
        pods = list(self._reflector.items().values())
        with self._lock:
            self._tracker.update(pods)
            histograms = dict(self._tracker.histograms)
        return families(histograms, startup.replica_counts(pods, self._clock()))


def families(
    histograms: dict[tuple[str, str, str], startup.Histogram],
    counts: dict[tuple[str, str], tuple[int, int, float | None]],
) -> list[Family]:
    startup_family = Family(spec.STARTUP)
    for (namespace, workload, phase), h in sorted(histograms.items()):
        base = [("namespace", namespace), ("workload", workload), ("phase", phase)]
        for bound, count in zip(startup.BUCKETS, h.buckets, strict=True):
            startup_family.add_rendered("_bucket", render_labels([*base, ("le", repr(bound))]), count)
        startup_family.add_rendered("_bucket", render_labels([*base, ("le", "+Inf")]), h.count)
        startup_family.add_rendered("_sum", render_labels(base), h.sum)
        startup_family.add_rendered("_count", render_labels(base), h.count)
    ready_family, starting_family = Family(spec.READY), Family(spec.STARTING)
    oldest_family = Family(spec.STARTING_OLDEST)
    for (namespace, workload), (ready, starting, oldest) in sorted(counts.items()):
        ready_family.add((namespace, workload), ready)
        starting_family.add((namespace, workload), starting)
        if oldest is not None:
            oldest_family.add((namespace, workload), round(oldest, 3))
    return [startup_family, ready_family, starting_family, oldest_family]
