"""Kubernetes API access: the only module that imports `kubernetes`.

    api = connect(kubeconfig)          # None: in-cluster config, then ~/.kube/config; raises KubeConfigError
    pods = Reflector(api, "pods", transform=to_record, field_selector="spec.nodeName=node-1",
                     on_event=mark_dirty, page_size=500)
    pods.start()                       # a daemon thread: list, then watch, forever
    pods.synced()                      # True once the first full list has been stored
    pods.available()                   # synced, and (optional=True) the resource is served and granted
    pods.items()                       # {"namespace/name" (or "name"): record}, a copy
    pods.last_sync_timestamp()         # Unix time the view was last confirmed current, None before that
    pods.stats()                       # ReflectorStats: objects, relists, watch_restarts, errors
    pods.stop()

Resources: `nodes`, `pods`, `resourceslices`, `resourceclaims`, `deviceclasses` (the last three from
`resource.k8s.io/v1`); `namespace=` narrows the namespaced ones.

`transform(raw_object_dict) -> record | None` runs on every listed or watched object; only what it returns
is kept (None: not kept, and a kept object whose update transforms to None is dropped). Keeping a few
fields per object instead of the client's models is what lets the cluster role hold 150,000 pods in
little memory. `on_event()` is called, from the reflector's thread, after every change of the stored view
(a completed list, each watch event); keep it cheap (set a flag).

How it survives real API servers:
- lists are paginated (`limit`/`continue`); an expired continue token (410) restarts the list;
- watches resume from the last resourceVersion with `allowWatchBookmarks` and a randomised
  `timeoutSeconds`, so a quiet watch ends normally and is re-opened without a relist;
- `410 Gone` (an ERROR event or the status of the request) means the history we stand on was compacted:
  relist, then watch from the new list's resourceVersion;
- a dropped connection, a 5xx or an API server that is down (also at start) is retried with exponential
  backoff; the stored view is kept meanwhile and `last_sync_timestamp()` tells how old it is;
- responses are read as raw JSON (`_preload_content=False`): the client's `Watch.stream(deserialize=False)`
  crashes on ERROR events, and its typed models are heavy and strict (client 37 uses pydantic).

`optional=True` (DRA objects): a 403/404 answer (API group not served, or no RBAC for it) counts as an
empty, synced collection, retried every `optional_retry_seconds`, so readiness does not wait on it.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import urllib3
from kubernetes import client
from kubernetes import config as _config
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

config: Any = _config  # the config loaders carry no type hints

T = TypeVar("T")

# resource -> (API class, cluster-wide list method, namespaced list method or None)
_LISTERS: dict[str, tuple[str, str, str | None]] = {
    "nodes": ("CoreV1Api", "list_node", None),
    "pods": ("CoreV1Api", "list_pod_for_all_namespaces", "list_namespaced_pod"),
    "resourceslices": ("ResourceV1Api", "list_resource_slice", None),
    "resourceclaims": ("ResourceV1Api", "list_resource_claim_for_all_namespaces", "list_namespaced_resource_claim"),
    "deviceclasses": ("ResourceV1Api", "list_device_class", None),
    "services": ("CoreV1Api", "list_service_for_all_namespaces", "list_namespaced_service"),
    "configmaps": ("CoreV1Api", "list_config_map_for_all_namespaces", "list_namespaced_config_map"),
    "ingresses": ("NetworkingV1Api", "list_ingress_for_all_namespaces", "list_namespaced_ingress"),
    "horizontalpodautoscalers": (
        "AutoscalingV2Api",
        "list_horizontal_pod_autoscaler_for_all_namespaces",
        "list_namespaced_horizontal_pod_autoscaler",
    ),
    # audit: the engine workloads and the disruption budgets around them
    "deployments": ("AppsV1Api", "list_deployment_for_all_namespaces", "list_namespaced_deployment"),
    "statefulsets": ("AppsV1Api", "list_stateful_set_for_all_namespaces", "list_namespaced_stateful_set"),
    "poddisruptionbudgets": (
        "PolicyV1Api",
        "list_pod_disruption_budget_for_all_namespaces",
        "list_namespaced_pod_disruption_budget",
    ),
}
# custom resources (CRDs that may be absent: use optional=True): resource -> (group, version, plural)
_CUSTOM: dict[str, tuple[str, str, str]] = {
    "httproutes": ("gateway.networking.k8s.io", "v1", "httproutes"),
    "scaledobjects": ("keda.sh", "v1alpha1", "scaledobjects"),
    "scaledjobs": ("keda.sh", "v1alpha1", "scaledjobs"),
    # audit
    "leaderworkersets": ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
    "podautoscalers": ("autoscaling.aibrix.ai", "v1alpha1", "podautoscalers"),
    "routes": ("route.openshift.io", "v1", "routes"),
    "inferencepools": ("inference.networking.k8s.io", "v1", "inferencepools"),
}
RESOURCES = (*_LISTERS, *_CUSTOM)


class KubeConfigError(Exception):
    """No usable Kubernetes configuration: neither in-cluster nor a kubeconfig file."""


def connect(kubeconfig: str | None = None) -> Any:
    """An `ApiClient` for `kubeconfig`, or the in-cluster service account, or `~/.kube/config`."""
    configuration = client.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            try:
                config.load_incluster_config(client_configuration=configuration)
            except config.ConfigException:
                config.load_kube_config(client_configuration=configuration)
    except (config.ConfigException, OSError, ValueError, TypeError) as exc:
        where = kubeconfig or "in-cluster or ~/.kube/config"
        raise KubeConfigError(f"no Kubernetes configuration ({where}): {exc}") from exc
    return client.ApiClient(configuration)


@dataclass(frozen=True, slots=True)
class ReflectorStats:
    objects: int
    relists: int  # full lists after the first one (410 Gone, resync)
    watch_restarts: int  # watch streams that ended abnormally (error, dropped connection, 410)
    errors: int  # failed requests, of any kind


class _GoneError(Exception):
    """The resourceVersion we watch from was compacted away: relist."""


class _WatchError(Exception):
    """An ERROR event other than 410 Gone."""


def key_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def _lines(response: Any) -> Iterator[bytes]:
    """The newline-delimited lines of a streamed (chunked) response, as they arrive."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        while (newline := buffer.find(b"\n")) != -1:
            line, buffer = buffer[:newline], buffer[newline + 1 :]
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


def _lister(api: Any, resource: str, namespace: str | None) -> Callable[..., Any]:
    """The client's list function for `resource` (cluster-wide, or in `namespace`)."""
    if resource in _CUSTOM:
        group, version, plural = _CUSTOM[resource]
        custom = client.CustomObjectsApi(api)
        if namespace is None:
            return functools.partial(custom.list_cluster_custom_object, group, version, plural)
        # the namespace is passed as a keyword by the reflector, like for the built-in kinds
        return functools.partial(custom.list_namespaced_custom_object, group, version, plural=plural)
    if resource not in _LISTERS:
        raise ValueError(f"unknown resource {resource!r} (known: {', '.join(RESOURCES)})")
    api_class, cluster_method, namespaced_method = _LISTERS[resource]
    if namespace is not None and namespaced_method is None:
        raise ValueError(f"{resource} is not namespaced")
    method = cluster_method if namespace is None or namespaced_method is None else namespaced_method
    return getattr(getattr(client, api_class)(api), method)  # type: ignore[no-any-return]


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
        self._list_fn: Callable[..., Any] = _lister(api, resource, namespace)
        self._base_kwargs: dict[str, Any] = {"namespace": namespace} if namespace is not None else {}
        if field_selector:
            self._base_kwargs["field_selector"] = field_selector
        if label_selector:
            self._base_kwargs["label_selector"] = label_selector
        self.resource = resource
        self._transform = transform
        self._on_event = on_event or (lambda: None)
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

    # -- public interface -----------------------------------------------------------------------------
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

    def last_sync_timestamp(self) -> float | None:
        return self._last_sync

    def stats(self) -> ReflectorStats:
        return ReflectorStats(len(self._items), max(0, self._lists - 1), self._watch_restarts, self._errors)

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
                    log.info("%s: not available (%s); treating as empty", self.resource, exc.status)
                    self._store_list({}, None)
                    self._stop.wait(self._optional_retry)
                    continue
                log.warning("%s: API error %s %s", self.resource, exc.status, exc.reason)
            except (urllib3.exceptions.HTTPError, OSError, ValueError, _WatchError) as exc:
                if self._stop.is_set():
                    break
                self._errors += 1
                if self._rv is not None:
                    self._watch_restarts += 1
                log.warning("%s: %s: %s (retrying in %.1fs)", self.resource, type(exc).__name__, exc, backoff)
            self._stop.wait(backoff * (0.5 + random.random() / 2))  # jitter: many exporters, one API server
            backoff = min(backoff * 2, self._backoff_max)

    def _call(self, **kwargs: Any) -> Any:
        return self._list_fn(**self._base_kwargs, **kwargs, _preload_content=False)

    def _list(self) -> None:
        items: dict[str, T] = {}
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
                value = self._apply(obj)
                if value is not None:
                    items[key_of(obj)] = value
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token or self._stop.is_set():
                break
        self._store_list(items, str(meta.get("resourceVersion") or "") or None)

    def _store_list(self, items: dict[str, T], resource_version: str | None) -> None:
        with self._lock:
            self._items = items
        self._rv = resource_version
        self._lists += 1
        self._listed_at = time.monotonic()
        self._touch()
        self._synced.set()
        self._on_event()

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
            for line in _lines(response):
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
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            key = key_of(obj)
            value = self._apply(obj) if kind != "DELETED" else None
            with self._lock:
                if value is None:
                    self._items.pop(key, None)
                else:
                    self._items[key] = value
        elif kind != "BOOKMARK":
            raise _WatchError(f"unknown watch event type {kind!r}")
        if resource_version:
            self._rv = str(resource_version)
        self._touch()
        if kind != "BOOKMARK":
            self._on_event()

    def _apply(self, obj: dict[str, Any]) -> T | None:
        try:
            return self._transform(obj)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # one malformed object, not the view
            self._errors += 1
            log.warning("%s %s: cannot read object: %s: %s", self.resource, _safe_key(obj), type(exc).__name__, exc)
            return None

    def _touch(self) -> None:
        self._last_sync = time.time()


def _safe_key(obj: dict[str, Any]) -> str:
    try:
        return key_of(obj)
    except (KeyError, TypeError, AttributeError):
        return "<unnamed>"


class Reflectors(dict[str, "Reflector[Any]"]):
    """Named reflectors that a collector starts, stops and waits on together."""

    def start(self) -> None:
        for reflector in self.values():
            reflector.start()

    def stop(self) -> None:
        for reflector in self.values():
            reflector.stop()

    def synced(self) -> bool:
        return all(r.synced() for r in self.values())

    def waiting(self) -> list[str]:
        """The names of the reflectors whose first full list has not arrived yet."""
        return [name for name, r in self.items() if not r.synced()]
