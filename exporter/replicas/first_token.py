"""The last start-up phase, ready -> first token, from what the node role sees (pure functions).

A replica that is Ready has passed its readiness probe; it has not necessarily served anyone. The phase
ends at the first scrape where the engine's time-to-first-token histogram counts a request, so it is
measured to the scrape interval, and it includes waiting for traffic: a replica Ready before anyone sends
it a request reports that wait, which is what a user behind a scale-up feels.

Counted once per readiness of a pod, and only for start-ups this exporter could see: a pod already Ready
and serving when the exporter starts is not counted; a pod whose Ready condition blips while its engine
keeps serving (the same process, its request count not reset) did not start again and is not counted.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from exporter.replicas.startup import BUCKETS, Histogram

PHASE = "first_token"


@dataclass(frozen=True, slots=True)
class Look:
    """One successful scrape of an engine pod."""

    namespace: str
    pod: str
    workload: str
    ready: float | None  # when the pod's Ready condition last turned True; None while not Ready
    requests: float  # requests that got a first token so far (the TTFT histogram's count, all models)


@dataclass(slots=True)
class _Pod:
    ready: float | None
    requests: float
    done: bool  # this readiness is counted, or it is not a start-up this exporter saw


class FirstTokenTracker:
    def __init__(self, started_at: float) -> None:
        self.histograms: dict[tuple[str, str, str], Histogram] = {}
        self._started_at = math.floor(started_at)  # API timestamps have whole seconds
        self._pods: dict[tuple[str, str], _Pod] = {}

    def update(self, looks: Iterable[Look], now: float, alive: Collection[tuple[str, str]]) -> None:
        """Fold one scrape's looks in; `alive` are the (namespace, pod) still discovered (a pod whose scrape
        failed this time is alive without a look, and keeps its state)."""
        for look in looks:
            self.histograms.setdefault((look.namespace, look.workload, PHASE), Histogram([0] * len(BUCKETS)))
            key = (look.namespace, look.pod)
            seen = self._pods.get(key)
            if seen is None:
                # first look: a Ready pod counts if nothing was served yet or it became Ready after our start
                done = look.ready is not None and look.requests > 0 and look.ready < self._started_at
                seen = self._pods[key] = _Pod(look.ready, look.requests, done)
            elif look.ready != seen.ready and look.ready is not None:
                # Ready again: a start-up if the engine had served nothing or restarted (its count went back)
                seen.done = 0 < seen.requests <= look.requests
                seen.ready = look.ready
            elif look.ready is None:
                seen.ready = None
            if look.ready is not None and not seen.done and look.requests > 0:
                seen.done = True
                self.histograms[(look.namespace, look.workload, PHASE)].observe(max(0.0, now - look.ready))
            seen.requests = look.requests
        for key in self._pods.keys() - set(alive):  # deleted pods; their counts stay in the histograms
            del self._pods[key]
