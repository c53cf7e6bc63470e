"""Runs collectors for one scrape and isolates their failures.

A collector that raises never fails the scrape: its families are dropped, and
`llm_exporter_collector_success{collector}` reports 0 with the error logged (rate-limited).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from exporter.catalogue import exporter_self
from exporter.exposition import Family

log = logging.getLogger(__name__)

LOG_EVERY_SECONDS = 60.0  # repeat the same collector error at most once a minute


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
class BackgroundCollector(Collector, Protocol):
    """A collector with background work (watches, samplers): started with the server, closed on shutdown."""

    def start(self) -> None: ...

    def close(self) -> None: ...


class CollectorSet:
    """The collectors of one role, run in order at every scrape."""

    def __init__(self, collectors: Sequence[Collector]) -> None:
        self.collectors = list(collectors)
        self._last_logged: dict[str, tuple[str, float]] = {}

    def ready(self) -> bool:
        return all(c.ready() for c in self.collectors if isinstance(c, ReadyCollector))

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

    def collect(self) -> list[Family]:
        families: list[Family] = []
        success = Family(exporter_self.COLLECTOR_SUCCESS)
        duration = Family(exporter_self.COLLECTOR_DURATION)
        unavailable = Family(exporter_self.COLLECTOR_UNAVAILABLE)
        for collector in self.collectors:
            start = time.perf_counter()
            ok, absent = 1.0, 0.0
            try:
                families.extend(collector.collect())
            except CollectorUnavailable as exc:
                ok, absent = 0.0, 1.0
                self._log(collector.name, f"unavailable: {exc}", logging.INFO)
            except Exception as exc:  # noqa: BLE001 - shutdown goes on for the others
                ok = 0.0
                self._log(collector.name, f"failed: {type(exc).__name__}: {exc}", logging.ERROR, exc)
            success.add((collector.name,), ok)
            duration.add((collector.name,), time.perf_counter() - start)
            unavailable.add((collector.name,), absent)
        families.extend((success, duration, unavailable))
        return families

    def _log(self, name: str, message: str, level: int, exc: BaseException | None = None) -> None:
        now = time.monotonic()
        previous = self._last_logged.get(name)
        if previous and previous[0] == message and now - previous[1] < LOG_EVERY_SECONDS:
            return
        self._last_logged[name] = (message, now)
        log.log(level, "collector %s %s", name, message, exc_info=exc if level >= logging.ERROR else None)
