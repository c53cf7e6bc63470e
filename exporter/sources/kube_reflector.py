"""The reflector: a list+watch mirror of one Kubernetes resource, kept in memory as small records.

    pods = Reflector(api, "pods", transform=to_record, field_selector="spec.nodeName=node-1",
                     on_event=mark_dirty, page_size=500)
    pods.start()                       # a daemon thread: list, then watch, forever
    pods.synced()                      # True once the first full list has been stored
    pods.available()                   # synced, and (optional=True) the resource is served and granted
    pods.items()                       # {"namespace/name" (or "name"): record}, a copy
    pods.last_sync_timestamp()         # Unix time the view was last confirmed current, None before that
    pods.stats()                       # ReflectorStats: objects, relists, watch_restarts, errors
    pods.stop()

`api` comes from `kube_connect.connect`, the resources and their paths from `kube_resources` (`namespace=`
narrows the namespaced ones). One watch, several readers: `view = pods.view(transform)` (before `start()`)
keeps its own records of the same list+watch (decoded once), and calls its listeners (`view.listen(callback)`)
only when its own records changed; `kube_shared.shared` hands such a reflector to every collector.

`transform(raw_object_dict) -> record | None` runs on every listed or watched object; only what it returns
is kept (None: not kept, and a kept object whose update transforms to None is dropped). Keeping a few
fields per object instead of the client's models is what lets the cluster role hold 150,000 pods in
little memory. `on_event()` is called, from the reflector's thread, after every change of the stored view
(a completed list, each watch event that changed a record: an event for an object that is not kept, or
whose record compares equal, changes nothing); keep it cheap (set a flag).

How it survives real API servers:
- lists are paginated (`limit`/`continue`); an expired continue token (410) restarts the list;
- watches resume from the last resourceVersion with `allowWatchBookmarks` and a randomised
  `timeoutSeconds`, so a quiet watch ends normally and is re-opened without a relist;
- `410 Gone` (an ERROR event or the status of the request) means the history we stand on was compacted:
  relist, then watch from the new list's resourceVersion;
- a dropped connection, a 5xx or an API server that is down (also at start) is retried with exponential
  backoff; the stored view is kept meanwhile and `last_sync_timestamp()` tells how old it is;
- responses are read as raw JSON (see `kube_resources`).

`optional=True` (DRA objects): a 403/404 answer (API group not served, or no RBAC for it) counts as an
empty, synced collection, retried every `optional_retry_seconds`, so readiness does not wait on it.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException

from exporter.sources.kube_failures import Failures
from exporter.sources.kube_mirror import ReflectorStats
from exporter.sources.kube_resources import lister, stream_lines

log = logging.getLogger("exporter.sources.kube")  # the reflectors' lines, under the name they always had
# urllib3 warns at each of its own quick retries of a connection: the reflectors say an outage once themselves
logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)

T = TypeVar("T")
V = TypeVar("V")


class _GoneError(Exception):
    """The resourceVersion we watch from was compacted away: relist."""


class _WatchError(Exception):
    """An ERROR event other than 410 Gone."""


def key_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


class Reflector(Generic[T]):
    """A list+watch mirror of one resource, reduced by `transform`; see the module docstring."""

    def __init__(
        self,
        api: Any,
        resource: str,
        *,
        transform: Callable[[dict[str, Any]], T | None],
        field_selector: str | None = None,
        label_selector: str | None = None,
        namespace: str | None = None,
        on_event: Callable[[], None] | None = None,
        page_size: int = 500,
        optional: bool = False,
        watch_timeout_seconds: float = 300.0,
        resync_seconds: float = 0.0,
        backoff_initial_seconds: float = 0.5,
        backoff_max_seconds: float = 30.0,
        optional_retry_seconds: float = 300.0,
        connect_timeout_seconds: float = 10.0,
    ) -> None:
        self._list_fn: Callable[..., Any] = lister(api, resource, namespace)
        self._base_kwargs: dict[str, Any] = {"namespace": namespace} if namespace is not None else {}
        if field_selector:
            self._base_kwargs["field_selector"] = field_selector
        if label_selector:
            self._base_kwargs["label_selector"] = label_selector
        self.resource = resource
        self._transform = transform
        self._listeners: list[Callable[[], None]] = [on_event] if on_event is not None else []
        self._views: list[ReflectorView[Any]] = []
        self._users = 0  # views started and not yet stopped
        self._page_size = page_size
        self._optional = optional
        self._watch_timeout = watch_timeout_seconds
        self._resync = resync_seconds
        self._backoff_initial = backoff_initial_seconds
        self._backoff_max = backoff_max_seconds
        self._optional_retry = optional_retry_seconds
        self._connect_timeout = connect_timeout_seconds

        self._lock = threading.Lock()
        self._items: dict[str, T] = {}
        self._rv: str | None = None
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self._last_sync: float | None = None
        self._listed_at = 0.0
        self._lists = self._watch_restarts = self._errors = 0
        host = getattr(getattr(api, "configuration", None), "host", "") or "the API server"
        self._failures = Failures(resource, str(host))

    # -- public interface -----------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self._thread is not None

    def view(
        self, transform: Callable[[dict[str, Any]], V | None], on_event: Callable[[], None] | None = None
    ) -> ReflectorView[V]:
        """Another reader of this list+watch, keeping its own records (`on_event` after each change of them);
        only before `start()`."""
        if self._thread is not None:
            raise RuntimeError(f"{self.resource}: a view added after start would miss the objects already listed")
        view: ReflectorView[V] = ReflectorView(self, transform)
        if on_event is not None:
            view.listen(on_event)
        self._views.append(view)
        return view

    def require(self) -> None:
        """A reader needs the resource: a 403 or 404 is a failure to report, not an empty collection."""
        self._optional = False

    def listen(self, callback: Callable[[], None]) -> None:
        """Call `callback` (from the reflector's thread) after every change of the stored records."""
        self._listeners.append(callback)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"reflector-{self.resource}", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        response = self._response
        if response is not None:  # unblock a read that may wait for minutes on a quiet watch
            try:
                response.shutdown()
            except (AttributeError, ValueError, RuntimeError, OSError):  # older urllib3, or already released
                response.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def available(self) -> bool:
        """False while an optional resource is not served (or not granted): its empty view is a stand-in."""
        return self._synced.is_set() and (self._rv is not None or not self._optional)

    def items(self) -> dict[str, T]:
        with self._lock:
            return dict(self._items)

    def values(self) -> list[T]:
        """The records alone (no copy of the keys' dict to build)."""
        with self._lock:
            return list(self._items.values())

    def last_sync_timestamp(self) -> float | None:
        return self._last_sync

    def stats(self) -> ReflectorStats:
        return ReflectorStats(len(self._items), max(0, self._lists - 1), self._watch_restarts, self._errors)

    def failure(self) -> str:
        """Why the last list or watch failed ("403 Forbidden"), "" once one has succeeded since."""
        return self._failures.short

    # -- the loop -------------------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = self._backoff_initial
        while not self._stop.is_set():
            try:
                if self._rv is None or (self._resync and time.monotonic() - self._listed_at >= self._resync):
                    self._list()
                if self._watch():
                    backoff = self._backoff_initial
                    continue
            except _GoneError:
                log.info("%s: resourceVersion %s is gone; relisting", self.resource, self._rv)
                self._rv = None
                self._watch_restarts += 1
                continue
            except ApiException as exc:
                self._errors += 1
                if exc.status == 410:  # an expired continue token, or a watch refused outright
                    self._rv = None
                    continue
                if self._optional and exc.status in (403, 404) and self._rv is None:
                    self._store_list({}, None)
                    self._failures.absent(exc)  # after the store, which clears it
                    self._stop.wait(self._optional_retry)
                    continue
                self._failures.failed(exc)
            except (urllib3.exceptions.HTTPError, OSError, ValueError, _WatchError) as exc:
                if self._stop.is_set():
                    break
                self._errors += 1
                if self._rv is not None:
                    self._watch_restarts += 1
                self._failures.failed(exc)
            self._stop.wait(backoff * (0.5 + random.random() / 2))  # jitter: many exporters, one API server
            backoff = min(backoff * 2, self._backoff_max)

    def _call(self, **kwargs: Any) -> Any:
        return self._list_fn(**self._base_kwargs, **kwargs, _preload_content=False)

    def _list(self) -> None:
        items: dict[str, T] = {}
        viewed: list[dict[str, Any]] = [{} for _ in self._views]
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": self._page_size, "_request_timeout": (self._connect_timeout, 60)}
            if token:
                kwargs["_continue"] = token
            response = self._call(**kwargs)
            try:
                page = json.loads(response.read())
            finally:
                response.release_conn()
            for obj in page.get("items") or ():
                key = key_of(obj)
                value = self._apply(self._transform, obj)
                if value is not None:
                    items[key] = value
                for view, store in zip(self._views, viewed, strict=True):
                    record = self._apply(view.transform, obj)
                    if record is not None:
                        store[key] = record
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token or self._stop.is_set():
                break
        self._store_list(items, str(meta.get("resourceVersion") or "") or None, viewed)

    def _store_list(
        self, items: dict[str, T], resource_version: str | None, viewed: list[dict[str, Any]] | None = None
    ) -> None:
        with self._lock:
            self._items = items
            for view, store in zip(self._views, viewed or [{} for _ in self._views], strict=True):
                view.items_ = store
        self._rv = resource_version
        self._lists += 1
        self._listed_at = time.monotonic()
        self._touch()
        self._synced.set()
        self._notify(self._listeners)
        for view in self._views:
            self._notify(view.listeners)

    def _watch(self) -> bool:
        """One watch stream; True when it ended normally (server timeout) after running a while."""
        if self._rv is None:  # optional resource not served: nothing to watch until the next retry
            return True
        timeout = int(self._watch_timeout * (1 + random.random()))
        started = time.monotonic()
        response = self._call(
            watch=True,
            resource_version=self._rv,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _request_timeout=(self._connect_timeout, timeout + 30),
        )
        self._response = response
        received = False
        try:
            if self._stop.is_set():  # stop() ran while we connected and saw no response to cut
                return True
            for line in stream_lines(response):
                received = True
                self._handle(json.loads(line))
        finally:
            self._response = None
            response.release_conn()
        if self._stop.is_set():
            return True
        if not received and time.monotonic() - started < 1.0:
            raise _WatchError("watch stream closed at once")  # back off instead of spinning
        self._touch()  # the stream ended cleanly: we were current until now
        return True

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _GoneError(obj.get("message", ""))
            raise _WatchError(f"watch error {obj.get('code')}: {obj.get('message')}")
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        changed: list[list[Callable[[], None]]] = []
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            key = key_of(obj)
            deleted = kind == "DELETED"
            value = None if deleted else self._apply(self._transform, obj)
            records = [None if deleted else self._apply(v.transform, obj) for v in self._views]
            with self._lock:
                if _put(self._items, key, value):
                    changed.append(self._listeners)
                for view, record in zip(self._views, records, strict=True):
                    if _put(view.items_, key, record):
                        changed.append(view.listeners)
        elif kind != "BOOKMARK":
            raise _WatchError(f"unknown watch event type {kind!r}")
        if resource_version:
            self._rv = str(resource_version)
        self._touch()
        for listeners in changed:
            self._notify(listeners)

    @staticmethod
    def _notify(listeners: list[Callable[[], None]]) -> None:
        for listener in listeners:
            listener()

    def _apply(self, transform: Callable[[dict[str, Any]], Any], obj: dict[str, Any]) -> Any:
        try:
            return transform(obj)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # one malformed object, not the view
            self._errors += 1
            log.warning("%s %s: cannot read object: %s: %s", self.resource, _safe_key(obj), type(exc).__name__, exc)
            return None

    def _acquire(self) -> None:
        with self._lock:
            self._users += 1
        self.start()

    def _release(self, timeout: float) -> None:
        with self._lock:
            self._users -= 1
            last = self._users <= 0
        if last:
            self.stop(timeout)

    def _touch(self) -> None:
        self._last_sync = time.time()
        if self._failures.last is not None:  # an answer: the failure said before is over
            self._failures.answered()


def _put(items: dict[str, Any], key: str, value: Any) -> bool:
    """Store `value` under `key` (None: remove it); True when that changed what `items` holds."""
    if value is None:
        return items.pop(key, None) is not None
    old = items.get(key)
    items[key] = value
    return old is None or (old is not value and old != value)


class ReflectorView(Generic[T]):
    """A reader of a (shared) reflector with records of its own: the read interface of a `Reflector`.

    `start()` and `stop()` start the reflector with its first started view and stop it with the last."""

    def __init__(self, reflector: Reflector[Any], transform: Callable[[dict[str, Any]], T | None]) -> None:
        self.resource = reflector.resource
        self.transform = transform
        self.listeners: list[Callable[[], None]] = []
        self.items_: dict[str, T] = {}  # written by the reflector under its lock
        self._reflector = reflector
        self._started = False

    def listen(self, callback: Callable[[], None]) -> None:
        """Call `callback` (from the reflector's thread) after every change of this view's records."""
        self.listeners.append(callback)

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._reflector._acquire()

    def stop(self, timeout: float = 5.0) -> None:
        if self._started:
            self._started = False
            self._reflector._release(timeout)

    def synced(self) -> bool:
        return self._reflector.synced()

    def wait_synced(self, timeout: float) -> bool:
        return self._reflector.wait_synced(timeout)

    def available(self) -> bool:
        return self._reflector.available()

    def items(self) -> dict[str, T]:
        with self._reflector._lock:
            return dict(self.items_)

    def values(self) -> list[T]:
        with self._reflector._lock:
            return list(self.items_.values())

    def last_sync_timestamp(self) -> float | None:
        return self._reflector.last_sync_timestamp()

    def stats(self) -> ReflectorStats:
        s = self._reflector.stats()
        return ReflectorStats(len(self.items_), s.relists, s.watch_restarts, s.errors)

    def failure(self) -> str:
        return self._reflector.failure()


def _safe_key(obj: dict[str, Any]) -> str:
    try:
        return key_of(obj)
    except (KeyError, TypeError, AttributeError):
        return "<unnamed>"
