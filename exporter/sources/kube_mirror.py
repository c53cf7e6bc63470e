"""What collectors hold of the Kubernetes watches: the read interface of a reflector or of one of its views
(`Mirror`), its counters (`ReflectorStats`), and the named set of them a collector starts, stops and waits on
together (`Reflectors`). Nothing here talks to the API server."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ReflectorStats:
    objects: int
    relists: int  # full lists after the first one (410 Gone, resync)
    watch_restarts: int  # watch streams that ended abnormally (error, dropped connection, 410)
    errors: int  # failed requests, of any kind


class Mirror(Protocol[T]):
    """What collectors read of a `Reflector` or a `ReflectorView`."""

    resource: str

    def start(self) -> None: ...
    def stop(self, timeout: float = 5.0) -> None: ...
    def synced(self) -> bool: ...
    def available(self) -> bool: ...
    def items(self) -> dict[str, T]: ...
    def values(self) -> list[T]: ...
    def last_sync_timestamp(self) -> float | None: ...
    def stats(self) -> ReflectorStats: ...
    def failure(self) -> str: ...
    def listen(self, callback: Callable[[], None]) -> None: ...


class Reflectors(dict[str, "Mirror[Any]"]):
    """Named reflectors (or views) that a collector starts, stops and waits on together."""

    def start(self) -> None:
        for reflector in self.values():
            reflector.start()

    def stop(self) -> None:
        for reflector in self.values():
            reflector.stop()

    def synced(self) -> bool:
        return all(r.synced() for r in self.values())

    def waiting(self, names: Iterable[str] | None = None) -> list[str]:
        """The names (of `names`, default all) of the reflectors whose first full list has not arrived yet."""
        return list(self.pending(names))

    def pending(self, names: Iterable[str] | None = None) -> dict[str, str]:
        """`waiting`, each with why its last attempt failed ("": none failed, the first answer is awaited)."""
        chosen = self if names is None else {n: self[n] for n in names if n in self}
        return {name: r.failure() for name, r in chosen.items() if not r.synced()}
