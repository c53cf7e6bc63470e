"""The audit live (cluster role): `llm_workload_check_failing` for every engine workload in the cluster.

The objects the checks read are watched (`exporter.audit.live`); the findings are computed again only when
one of them changed or the measured cold starts did, not on every scrape. Every resource is optional (a CRD
not installed, a grant missing): its checks see none of it, and readiness never waits on it beyond the
first answer. Without Deployments and StatefulSets there is nothing to audit: the collector fails, visibly
(`llm_exporter_collector_success{collector="audit"} 0`). The node check that reads every pod
(`non-gpu-pods-on-gpu-nodes`) is left to the command: the cluster role keeps no view of all pods for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from exporter.audit import live, measured, run
from exporter.audit.base import Measured
from exporter.audit.recognise import DEFAULT, Recognition
from exporter.catalogue import audit as spec
from exporter.collect import CollectorUnavailable
from exporter.exposition import Family
from exporter.k8s.workloads import Workload
from exporter.replicas.startup import BUCKETS, Histogram
from exporter.sources.kube_mirror import Reflectors
from exporter.sources.kube_reflector import Reflector

REQUIRED = ("deployments", "statefulsets")


class AuditBlindError(Exception):
    """The workloads cannot be listed (RBAC after an upgrade): the audit reports nothing, and says so."""


Histograms = Callable[[], Mapping[tuple[str, str, str], Histogram]]


def measured_lookup(histograms: Mapping[tuple[str, str, str], Histogram]) -> Callable[[Workload], Measured]:
    """Each workload's cold start (p90 of each phase, summed) and start (p90 of `starting`), as seen here."""
    cold: dict[tuple[str, str], float] = {}
    starting: dict[tuple[str, str], float] = {}
    for (namespace, workload, phase), h in histograms.items():
        p90 = measured.bucket_quantile(0.9, BUCKETS, h.buckets, h.count)
        if p90 is None:
            continue
        cold[(namespace, workload)] = cold.get((namespace, workload), 0.0) + p90
        if phase == "starting":
            starting[(namespace, workload)] = p90
    # the replica series name the operator resource behind a generated workload (docs/cluster.md)
    return lambda w: Measured(
        cold.get((w.namespace, w.owner or w.name)), starting.get((w.namespace, w.owner or w.name))
    )


def check_family(findings: Iterable[run.Finding]) -> Family:
    family = Family(spec.CHECK_FAILING)
    for f in findings:
        if f.outcome.status in ("fail", "pass"):
            w = f.workload
            family.add(
                (w.namespace, w.name, w.kind, f.check.id, f.check.severity), 1.0 if f.outcome.status == "fail" else 0.0
            )
    return family


class AuditCollector:
    name = "audit"

    def __init__(
        self,
        reflectors: Mapping[str, Reflector[dict[str, Any]]],
        histograms: Histograms | None = None,
        how: Recognition = DEFAULT,
    ) -> None:
        self._how = how
        self._dirty = threading.Event()
        self._reflectors = Reflectors(reflectors)
        self._histograms = histograms
        self._lock = threading.Lock()
        self._family: Family | None = None
        self._cold_starts: dict[tuple[str, str, str], int] = {}

    @classmethod
    def from_api(
        cls, api: Any, histograms: Histograms | None = None, how: Recognition = DEFAULT, **options: Any
    ) -> AuditCollector:
        collector = cls({}, histograms, how)
        collector._reflectors = live.reflectors(api, keep=how, on_event=collector._dirty.set, **options)
        return collector

    def mark_dirty(self) -> None:
        self._dirty.set()

    def start(self) -> None:
        self._reflectors.start()

    def close(self) -> None:
        self._reflectors.stop()

    def ready(self) -> bool:
        return all(self._reflectors[name].synced() for name in REQUIRED if name in self._reflectors)

    def collect(self) -> Iterable[Family]:
        if not self.ready():
            raise CollectorUnavailable("waiting for the first full list of deployments and statefulsets")
        blind = [name for name in REQUIRED if not self._reflectors[name].available()]
        if blind:  # no engine workload can be seen: a failure to fix (RBAC), not a source absent by design
            raise AuditBlindError(f"{', '.join(blind)} not granted or not served: no engine workload to audit")
        histograms = dict(self._histograms()) if self._histograms is not None else {}
        counts = {k: h.count for k, h in histograms.items()}
        with self._lock:
            if self._family is None or self._dirty.is_set() or counts != self._cold_starts:
                self._dirty.clear()  # before reading: an event during the computation marks it again
                self._cold_starts = counts
                inv = live.collect(self._reflectors)
                engines = run.engines(inv.workloads, self._how)
                findings = run.audit(engines, inv.around, measured_lookup(histograms), self._how)
                self._family = check_family(findings)
            return [self._family]
