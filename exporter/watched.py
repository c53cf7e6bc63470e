"""What every collector that reads reflectors shares: start, close, readiness, and a result kept between
changes.

    class RoutesCollector(Watching):
        def __init__(self, reflectors):
            self._reflectors = Reflectors(reflectors)
            self._families = Recomputed(self._compute)
            self.listen_all(self._families.mark_dirty)     # recompute after a change, not at every scrape

        def collect(self):
            self.wait_for_first_lists()                    # CollectorUnavailable until every first list
            return self._families.get()

`required` names the reflectors readiness waits on (None: all of them): optional sources such as a
collector's HPAs never hold it back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from exporter.collect import CollectorUnavailable, describe_pending
from exporter.sources.kube_mirror import Reflectors

T = TypeVar("T")


class Watching:
    """start/close/ready of a collector over `self._reflectors`, and the wait for their first lists."""

    _reflectors: Reflectors
    required: tuple[str, ...] | None = None

    def start(self) -> None:
        self._reflectors.start()

    def close(self) -> None:
        self._reflectors.stop()

    def ready(self) -> bool:
        return not self._reflectors.waiting(self.required)

    def pending(self) -> dict[str, str]:
        """The reflectors readiness waits on, each with why its last attempt failed ("": none failed)."""
        return self._reflectors.pending(self.required)

    def wait_for_first_lists(self) -> None:
        """Raise `CollectorUnavailable` naming every reflector whose first full list has not arrived, and the
        API server's answer where it refused or could not be reached."""
        pending = self.pending()
        if pending:
            raise CollectorUnavailable(f"waiting for {describe_pending(pending)}")

    def listen_all(self, callback: Callable[[], None]) -> None:
        """`callback` after every change of any of the reflectors' records (from their threads)."""
        for reflector in self._reflectors.values():
            reflector.listen(callback)


class Recomputed(Generic[T]):
    """A value computed again only after `mark_dirty()` (a watch event changed its inputs); concurrent
    scrapes share one computation. A computation that raises leaves it dirty: the next one tries again."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute = compute
        self._lock = threading.Lock()
        self._dirty = True
        self._value: T | None = None

    def mark_dirty(self) -> None:
        """A listener of the reflectors, called from their threads: only a flag."""
        self._dirty = True

    def get(self) -> T:
        with self._lock:
            if self._dirty or self._value is None:
                self._dirty = False  # before the computation: a change during it marks it dirty again
                try:
                    self._value = self._compute()
                except BaseException:
                    self._dirty = True
                    raise
            return self._value
