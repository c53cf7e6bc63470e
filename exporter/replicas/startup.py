"""How long an engine replica takes to start, phase by phase, from the pod's own timestamps (pure functions).

"The autoscaler is late by exactly the cold-start time": measure it, then set the minimum replicas from it.

- `scheduling`: created -> scheduled (the PodScheduled condition turned True): waiting for a node (GPUs,
  fragmentation, a node being provisioned);
- `starting`: scheduled -> ready (the Ready condition turned True): image pull, weights download and load,
  CUDA graph capture, the readiness probe;
- `first_token` (node role, `first_token.py`): ready -> the first request served.

A start-up is observed only when it happened while this exporter was watching: pods already running when
the exporter starts are not counted again, so a restart of the exporter does not repeat old start-ups.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.k8s import owners
from exporter.pod_fields import condition_since, timestamp
from exporter.replicas.model_info import ModelInfo

PHASES = ("scheduling", "starting")
# seconds: a tiny model on a warm node starts in seconds, a 70B model pulling weights in tens of minutes
BUCKETS = (1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 900.0, 1800.0, 3600.0)


@dataclass(frozen=True)
class PodStart:
    uid: str
    namespace: str
    workload: str
    created: float
    scheduled: float | None
    ready: float | None
    labels: tuple[tuple[str, str], ...] = ()  # for the Services that select the pod (routes)
    name: str = ""  # for llm_replica_pod_info: the engine series carry the pod's name, not its workload
    model: ModelInfo = field(default_factory=ModelInfo)  # what it serves (llm_model_info), from its spec and status
    # the kind of `workload` (Deployment, StatefulSet, LeaderWorkerSet, ...): the collector follows its owner
    workload_kind: str = "Pod"


def pod_start(obj: Mapping[str, Any], scrape_annotation: str) -> PodStart | None:
    """The start timestamps of an opted-in engine pod ("": every pod the watch selects); None for every
    other pod (not kept)."""
    meta = obj.get("metadata") or {}
    if scrape_annotation and (meta.get("annotations") or {}).get(scrape_annotation) != "true":
        return None
    created = timestamp(meta.get("creationTimestamp"))
    if created is None:
        return None
    status = obj.get("status") or {}
    kind, workload = owners.generated_of_pod(meta)  # the one reading of a pod's workload (`pod_fields.workload_of`)
    return PodStart(
        str(meta.get("uid", "")),
        str(meta.get("namespace", "")),
        workload,
        created,
        condition_since(status, "PodScheduled"),
        condition_since(status, "Ready"),
        tuple(sorted((meta.get("labels") or {}).items())),
        str(meta.get("name", "")),
        workload_kind=kind,
    )


def durations(pod: PodStart) -> dict[str, float]:
    """The phases `pod` has completed, in seconds (never negative: clocks of different writers)."""
    out = {}
    if pod.scheduled is not None:
        out["scheduling"] = max(0.0, pod.scheduled - pod.created)
        if pod.ready is not None:
            out["starting"] = max(0.0, pod.ready - pod.scheduled)
    return out


@dataclass
class Histogram:
    """Cumulative bucket counts, sum and count of one label set."""

    buckets: list[int]
    sum: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        for i, bound in enumerate(BUCKETS):
            if value <= bound:
                self.buckets[i] += 1
        self.sum += value
        self.count += 1


class StartupTracker:
    """Turns successive views of the engine pods into observed phase durations, each phase once per pod.

    A pod's start-up counts when this exporter saw it before it was Ready, or when it was created after
    `started_at` (it may have become Ready between two looks): never for pods that were already running
    when the exporter started, so a restart of the exporter does not count old start-ups again.
    """

    def __init__(self, started_at: float) -> None:
        self.histograms: dict[tuple[str, str, str], Histogram] = {}
        self._started_at = started_at
        self._known: set[str] = set()
        self._watched: set[str] = set()  # pods whose startup this exporter saw
        self._observed: set[tuple[str, str]] = set()  # (uid, phase) already counted

    def update(self, pods: Iterable[PodStart]) -> None:
        current = list(pods)
        for pod in current:
            for phase in PHASES:  # every workload seen starts at zero: increase() then counts its first start
                self.histograms.setdefault((pod.namespace, pod.workload, phase), Histogram([0] * len(BUCKETS)))
            if pod.uid not in self._known:
                self._known.add(pod.uid)
                # creationTimestamp has whole seconds: a pod created in the second the exporter started counts
                if pod.ready is None or pod.created >= math.floor(self._started_at):
                    self._watched.add(pod.uid)
            if pod.uid not in self._watched:
                continue
            for phase, seconds in durations(pod).items():
                if (pod.uid, phase) not in self._observed:
                    self._observed.add((pod.uid, phase))
                    self.histograms[(pod.namespace, pod.workload, phase)].observe(seconds)
        alive = {pod.uid for pod in current}  # forget deleted pods; their counts stay in the histograms
        self._known &= alive
        self._watched &= alive
        self._observed = {(uid, phase) for uid, phase in self._observed if uid in alive}


def replica_counts(pods: Iterable[PodStart], now: float) -> dict[tuple[str, str], tuple[int, int, float | None]]:
    """(namespace, workload) -> (pods Ready, pods not yet Ready, seconds since the oldest of those was
    created, None when every pod is Ready)."""
    out: dict[tuple[str, str], tuple[int, int, float | None]] = {}
    for pod in pods:
        ready, starting, oldest = out.get((pod.namespace, pod.workload), (0, 0, None))
        if pod.ready is not None:
            ready += 1
        else:
            starting += 1
            oldest = max(oldest or 0.0, now - pod.created)
        out[(pod.namespace, pod.workload)] = (ready, starting, oldest)
    return out
