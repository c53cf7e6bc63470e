"""Runs collectors for one scrape, concurrently, and isolates their failures and their hangs.

A collector that raises never fails the scrape: its families are dropped, and
`llm_exporter_collector_success{collector}` reports 0 with the error logged (rate-limited).

Each collector runs in its own thread and gets a deadline inside the scrape budget (its own
`deadline_seconds` when it declares one, else the whole budget). One past its deadline (an NVML call that
never returns, a kubelet socket that stalls) is reported like a failure and counted in
`llm_exporter_collector_timeouts_total{collector}`; the other collectors' series are served. Its thread is
left to finish on its own and never doubled: while a run is in flight the next scrape waits on that same run
instead of starting another, so a hung source costs one thread, not one per scrape.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from exporter.catalogue import exporter_self
from exporter.exposition import Family

log = logging.getLogger(__name__)

LOG_EVERY_SECONDS = 60.0  # repeat the same collector error at most once a minute
DEFAULT_BUDGET_SECONDS = 9.5  # Prometheus' default scrape_timeout (10 s), less time to render and send


class CollectorUnavailable(Exception):
    """Raised by a collector whose source is absent on this machine (no NVML, no API server)."""


@runtime_checkable
class Collector(Protocol):
    name: str

    def collect(self) -> Iterable[Family]:
        """The families of one scrape. May raise: the CollectorSet isolates it."""
        ...


@runtime_checkable
class ReadyCollector(Collector, Protocol):
    def ready(self) -> bool:
        """True once the collector's view is complete enough to serve (for example, first sync done)."""
        ...


@runtime_checkable
class PendingCollector(Protocol):
    def pending(self) -> Mapping[str, str]:
        """What readiness waits on: each resource whose first sync is pending -> why its last attempt failed
        ("" while the first answer is simply awaited)."""
        ...


def describe_pending(pending: Mapping[str, str]) -> str:
    """ "the first sync of nodes, pods (API server: 403 Forbidden on pods)" ("" when nothing is pending)."""
    if not pending:
        return ""
    failed: dict[str, list[str]] = {}
    for resource, why in pending.items():
        if why:
            failed.setdefault(why, []).append(resource)
    answers = "; ".join(f"{why} on {', '.join(resources)}" for why, resources in failed.items())
    return f"the first sync of {', '.join(pending)}" + (f" (API server: {answers})" if answers else "")


@runtime_checkable
class BackgroundCollector(Collector, Protocol):
    """A collector with background work (watches, samplers): started with the server, closed on shutdown."""

    def start(self) -> None: ...

    def close(self) -> None: ...


class _Run:
    """One `collect()` of one collector, in a daemon thread (a hung one must not hold up the exit)."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.started = time.perf_counter()
        self.finished = 0.0
        self.done = threading.Event()
        self.families: list[Family] = []
        self.error: BaseException | None = None
        threading.Thread(target=self._run, name=f"collect-{collector.name}", daemon=True).start()

    def _run(self) -> None:
        try:
            self.families = list(self.collector.collect())
        except BaseException as exc:  # noqa: BLE001 - reported by the CollectorSet, never lost in a thread
            self.error = exc
        finally:
            self.finished = time.perf_counter()
            self.done.set()


class CollectorSet:
    """The collectors of one role, run concurrently at every scrape."""

    def __init__(self, collectors: Sequence[Collector], budget_seconds: float = DEFAULT_BUDGET_SECONDS) -> None:
        self.collectors = list(collectors)
        self.budget_seconds = budget_seconds
        self._last_logged: dict[str, tuple[str, float]] = {}
        self._in_flight: dict[int, _Run] = {}  # id(collector) -> its run that went past a deadline
        self._timeouts: Counter[str] = Counter()
        self._unavailable: dict[str, str] = {}  # collector -> why it was unavailable at its last run
        self._lock = threading.Lock()

    def ready(self) -> bool:
        return all(c.ready() for c in self.collectors if isinstance(c, ReadyCollector))

    def waiting_for(self) -> str:
        """What readiness waits on, in words ("" when ready): the resources whose first sync is pending, with
        the API server's answer where it failed, then any other collector not ready, by name (and what it
        said when last run)."""
        pending: dict[str, str] = {}
        others: list[str] = []
        for collector in self.collectors:
            if not isinstance(collector, ReadyCollector) or collector.ready():
                continue
            found = collector.pending() if isinstance(collector, PendingCollector) else {}
            for resource, why in found.items():  # collectors share watches: one entry per resource
                pending[resource] = pending.get(resource) or why
            if not found:
                said = self._unavailable.get(collector.name)
                others.append(f"collector {collector.name}" + (f" ({said})" if said else ""))
        return "; ".join(([describe_pending(pending)] if pending else []) + others)

    def start(self) -> None:
        for collector in self.collectors:
            if isinstance(collector, BackgroundCollector):
                collector.start()

    def close(self) -> None:
        for collector in self.collectors:
            if isinstance(collector, BackgroundCollector):
                try:
                    collector.close()
                except Exception:
                    log.exception("collector %s failed to close", collector.name)

    def in_flight(self) -> list[str]:
        """Names of the collectors whose last run is still going (past its deadline)."""
        with self._lock:
            return [run.collector.name for run in self._in_flight.values() if not run.done.is_set()]

    def collect(self, budget_seconds: float | None = None) -> list[Family]:
        """Every collector's families, each collector within its deadline inside `budget_seconds`."""
        budget = self.budget_seconds if budget_seconds is None else min(budget_seconds, self.budget_seconds)
        with self._lock:  # one scrape at a time per set: the in-flight bookkeeping is not shared
            start = time.monotonic()
            runs = [(c, self._run(c)) for c in self.collectors]
            families: list[Family] = []
            success = Family(exporter_self.COLLECTOR_SUCCESS)
            duration = Family(exporter_self.COLLECTOR_DURATION)
            timeouts = Family(exporter_self.COLLECTOR_TIMEOUTS)
            unavailable = Family(exporter_self.COLLECTOR_UNAVAILABLE)
            for collector, run in runs:
                name = collector.name
                own = getattr(collector, "deadline_seconds", None)
                deadline = start + (min(budget, own) if isinstance(own, (int, float)) else budget)
                ok, absent, took = self._outcome(collector, run, deadline)
                if ok:
                    families.extend(run.families)
                success.add((name,), 1.0 if ok else 0.0)
                duration.add((name,), took)
                timeouts.add((name,), float(self._timeouts[name]))
                unavailable.add((name,), 1.0 if absent else 0.0)
            families.extend((success, duration, timeouts, unavailable))
            return families

    def _run(self, collector: Collector) -> _Run:
        """The run still in flight from an earlier scrape (waited on, never doubled), else a fresh one."""
        late = self._in_flight.pop(id(collector), None)
        if late is not None and not late.done.is_set():
            return late
        return _Run(collector)  # a late run that has ended since is stale: its result is not served

    def _outcome(self, collector: Collector, run: _Run, deadline: float) -> tuple[bool, bool, float]:
        """(succeeded, unavailable, seconds) of `run`, waiting for it until `deadline` at most."""
        name = collector.name
        if not run.done.wait(max(0.0, deadline - time.monotonic())):
            self._in_flight[id(collector)] = run  # the next scrape waits on this run rather than start a second one
            self._timeouts[name] += 1
            waited = time.perf_counter() - run.started
            self._log(name, "timed out: no result within its deadline", logging.WARNING)
            return False, False, waited
        took = run.finished - run.started
        if isinstance(run.error, CollectorUnavailable):
            self._unavailable[name] = str(run.error)
            self._log(name, f"unavailable: {run.error}", logging.INFO)
            return False, True, took
        self._unavailable.pop(name, None)
        if run.error is not None:
            exc = run.error
            self._log(name, f"failed: {type(exc).__name__}: {exc}", logging.ERROR, exc)
            return False, False, took
        return True, False, took

    def _log(self, name: str, message: str, level: int, exc: BaseException | None = None) -> None:
        now = time.monotonic()
        previous = self._last_logged.get(name)
        if previous and previous[0] == message and now - previous[1] < LOG_EVERY_SECONDS:
            return
        self._last_logged[name] = (message, now)
        log.log(level, "collector %s %s", name, message, exc_info=exc if level >= logging.ERROR else None)
