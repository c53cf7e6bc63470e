"""The replica collectors: start-up histograms of engine pods, what each serves (llm_model_info), and their
autoscalers.

- cluster role: the engine pods watched (the watch it shares with the routes collector, `engine_pods.py`),
  their scheduling and starting phases from the pods' own timestamps, which workload each pod belongs to
  (the operator resource that generated it, where one did: `owned.py`), and the HPAs (KEDA's included)
  that scale those workloads;
- node role: ready -> first token, from the pods discovery finds and the engine collector's scrapes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from exporter.catalogue import engine as engine_spec
from exporter.catalogue import replicas as spec
from exporter.exposition import Family, render_labels
from exporter.k8s.owners import Key
from exporter.replicas import autoscalers, first_token, model_info, owned, startup
from exporter.sources.kube_mirror import Mirror, Reflectors
from exporter.watched import Watching


class ReplicasCollector(Watching):
    name = "replicas"
    required = ("pods",)  # the HPAs are optional (a grant missing after an upgrade): never wait on them

    def __init__(
        self,
        reflector: Mirror[startup.PodStart],
        hpas: Mirror[autoscalers.Autoscaler] | None = None,
        clock: Callable[[], float] = time.time,
        workloads: Mapping[str, Mirror[tuple[Key, tuple[str, str]]]] | None = None,
    ) -> None:
        self._pods = reflector
        self._hpas = hpas
        # the operator owner of each generated workload (`exporter.k8s.owners.owned_record`), by resource
        self._workloads = dict(workloads or {})
        # the HPAs and workloads are optional (a grant missing after an upgrade): they never hold back readiness
        self._reflectors = Reflectors(
            {"pods": reflector, **({"hpas": hpas} if hpas is not None else {}), **self._workloads}
        )
        self._clock = clock
        self._tracker = startup.StartupTracker(started_at=clock())
        # workloads that ever had engine pods: an autoscaler that scaled one to zero is still reported
        self._engine_workloads: set[tuple[str, str]] = set()
        self._kinds: dict[tuple[str, str], str] = {}  # (namespace, generated workload) -> its kind
        self._lock = threading.Lock()  # concurrent scrapes update the tracker one at a time

    def startup_histograms(self) -> dict[tuple[str, str, str], startup.Histogram]:
        """A copy of the start-up histograms by (namespace, generated workload, phase): the audit's measured
        cold starts (the audit names the Deployment, StatefulSet or LeaderWorkerSet, not its owner)."""
        with self._lock:
            return {k: startup.Histogram(list(h.buckets), h.sum, h.count) for k, h in self._tracker.histograms.items()}

    def collect(self) -> Iterable[Family]:
        self.wait_for_first_lists()
        generated = self._pods.values()
        resolve = owned.resolver(
            [*(r for view in self._workloads.values() for r in view.values()), *owned.scale_targets(generated)]
        )
        pods = owned.pods(generated, resolve)
        hpas = owned.autoscalers(self._hpas.values() if self._hpas is not None else [], resolve)
        with self._lock:
            self._tracker.update(generated)  # by generated workload: the audit's cold starts are read so
            self._kinds.update(((p.namespace, p.workload), p.workload_kind) for p in generated)
            histograms = owned.histograms(self._tracker.histograms, self._kinds, resolve)
            self._engine_workloads.update((p.namespace, p.workload) for p in pods)
            scalers = autoscalers.of_engines(hpas, self._engine_workloads)
        return [
            *families(histograms, startup.replica_counts(pods, self._clock())),
            pod_info(pods),
            model_info.family((p.namespace, p.name, p.model) for p in pods),
            *autoscaler_families(scalers),
        ]


class PodRecord(Protocol):
    """What the first-token tracker reads of a discovered pod (`exporter.engines.discovery.PodRecord`)."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def ready(self) -> float | None: ...


class _Target(Protocol):
    @property
    def namespace(self) -> str: ...
    @property
    def pod(self) -> str: ...


class _Mapped(Protocol):
    @property
    def samples(self) -> Mapping[Any, Sequence[tuple[str, str, float]]]: ...


class Outcome(Protocol):
    """What the first-token tracker reads of one engine scrape (`exporter.engines.collector.Outcome`): the
    target's pod and, when the scrape mapped, its samples. A shape, not an import: the engine collector's
    observers are plain callables, and neither package imports the other."""

    @property
    def target(self) -> _Target: ...
    @property
    def mapped(self) -> _Mapped | None: ...


class FirstTokenCollector:
    """Node role: ready -> first token of the engine pods discovery finds on this node.

    The engine collector hands each scrape's outcomes to `observe` (static targets have no pod to read a
    Ready time from and are left out); `collect` exports the histogram, and reports an `observe` that failed.
    """

    name = "replica_first_token"

    def __init__(self, pods: Callable[[], Iterable[PodRecord]], clock: Callable[[], float] = time.time) -> None:
        self._pods = pods
        self._clock = clock
        self._tracker = first_token.FirstTokenTracker(started_at=clock())
        self._error = ""
        self._lock = threading.Lock()

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        try:
            pods = {(p.namespace, p.name): p for p in self._pods()}
            looks = [look for o in outcomes if (look := _look(o, pods)) is not None]
            with self._lock:
                self._tracker.update(looks, self._clock(), pods.keys())
                self._error = ""
        except Exception as exc:  # noqa: BLE001 - reported by collect(), never in the engine scrape's way
            self._error = f"{type(exc).__name__}: {exc}"

    def collect(self) -> Iterable[Family]:
        with self._lock:
            if self._error:
                raise RuntimeError(self._error)
            return [startup_family(dict(self._tracker.histograms))]


def _look(outcome: Outcome, pods: dict[tuple[str, str], PodRecord]) -> first_token.Look | None:
    pod = pods.get((outcome.target.namespace, outcome.target.pod))
    if pod is None or outcome.mapped is None:
        return None
    samples = outcome.mapped.samples.get(engine_spec.TIME_TO_FIRST_TOKEN, [])
    requests = sum(value for suffix, _, value in samples if suffix == "_count")
    return first_token.Look(pod.namespace, pod.name, pod.workload, pod.ready, requests)


def startup_family(histograms: dict[tuple[str, str, str], startup.Histogram]) -> Family:
    family = Family(spec.STARTUP)
    for (namespace, workload, phase), h in sorted(histograms.items()):
        base = [("namespace", namespace), ("workload", workload), ("phase", phase)]
        for bound, count in zip(startup.BUCKETS, h.buckets, strict=True):
            family.add_rendered("_bucket", render_labels([*base, ("le", repr(bound))]), count)
        family.add_rendered("_bucket", render_labels([*base, ("le", "+Inf")]), h.count)
        family.add_rendered("_sum", render_labels(base), h.sum)
        family.add_rendered("_count", render_labels(base), h.count)
    return family


def families(
    histograms: dict[tuple[str, str, str], startup.Histogram],
    counts: dict[tuple[str, str], tuple[int, int, float | None]],
) -> list[Family]:
    started = startup_family(histograms)
    ready_family, starting_family = Family(spec.READY), Family(spec.STARTING)
    oldest_family = Family(spec.STARTING_OLDEST)
    for (namespace, workload), (ready, starting, oldest) in sorted(counts.items()):
        ready_family.add((namespace, workload), ready)
        starting_family.add((namespace, workload), starting)
        if oldest is not None:
            oldest_family.add((namespace, workload), round(oldest, 3))
    return [started, ready_family, starting_family, oldest_family]


def pod_info(pods: Iterable[startup.PodStart]) -> Family:
    family = Family(spec.POD_INFO)
    for namespace, name, workload in sorted({(p.namespace, p.name, p.workload) for p in pods}):
        family.add((namespace, name, workload), 1.0)
    return family


def autoscaler_families(scalers: Iterable[autoscalers.Autoscaler]) -> list[Family]:
    desired, current = Family(spec.AUTOSCALER_DESIRED), Family(spec.AUTOSCALER_CURRENT)
    low, high, limited = Family(spec.AUTOSCALER_MIN), Family(spec.AUTOSCALER_MAX), Family(spec.AUTOSCALER_LIMITED)
    for a in scalers:
        labels = (a.namespace, a.workload, a.name, a.kind)
        desired.add(labels, a.desired_replicas)
        current.add(labels, a.current_replicas)
        low.add(labels, a.min_replicas)
        high.add(labels, a.max_replicas)
        limited.add(labels, 1.0 if a.scaling_limited else 0.0)
    return [desired, current, low, high, limited]
