"""Pod attribution collector: `llm_gpu_pod_info` from the kubelet PodResources API, off the scrape path.

A background thread polls `List` every `refresh_seconds` (the kubelet rate-limits the API, and a scrape must
not wait on it); a scrape only maps the cached assignments onto the GPU collector's current devices. When
the socket is absent the collector is unavailable and the GPU metrics still flow; when the kubelet stops
answering, the cached view is served for a few refresh periods and then withdrawn rather than go stale.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from exporter.catalogue import gpu as cat
from exporter.collect import CollectorUnavailable
from exporter.exposition import Family
from exporter.gpu.attribution import attribute
from exporter.sources.podresources import ContainerDevices, PodResourcesUnavailableError

log = logging.getLogger(__name__)

MIN_REFRESH_SECONDS = 1.0
STALE_AFTER_REFRESHES = 3


class Lister(Protocol):
    socket_path: str

    def list(self) -> list[ContainerDevices]: ...
    def close(self) -> None: ...


class GpuPodsCollector:
    name = "gpu_pods"

    def __init__(
        self,
        lister: Lister,
        *,
        node: str,
        devices: Callable[[], Mapping[str, str]],
        refresh_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lister = lister
        self._node = node
        self._devices = devices
        self._refresh = max(refresh_seconds, MIN_REFRESH_SECONDS)
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._assignments: list[ContainerDevices] | None = None
        self._last_success = 0.0
        self._error = "waiting for the first pod-resources refresh"
        self._unavailable = True

    def refresh(self) -> None:
        """One `List` call; its result (or its failure) is what the next scrapes see."""
        try:
            assignments = self._lister.list()
        except PodResourcesUnavailableError as exc:
            self._record(None, str(exc), unavailable=True)
        except Exception as exc:  # noqa: BLE001 - any kubelet failure keeps the last view
            self._record(None, f"{type(exc).__name__}: {exc}", unavailable=False)
        else:
            self._record(assignments, "", unavailable=False)

    def _record(self, assignments: list[ContainerDevices] | None, error: str, *, unavailable: bool) -> None:
        with self._lock:
            if assignments is not None:
                self._assignments, self._last_success = assignments, self._clock()
            elif error != self._error:
                log.log(logging.INFO if unavailable else logging.WARNING, "pod attribution: %s", error)
            if unavailable:
                self._assignments = None  # no socket: no kubelet to vouch for the old view
            self._error, self._unavailable = error, unavailable

    def assignments(self) -> list[ContainerDevices] | None:
        """The devices assigned to containers as last listed; None when there is no fresh view to trust."""
        with self._lock:
            assignments, age = self._assignments, self._clock() - self._last_success
        if assignments is None or age > STALE_AFTER_REFRESHES * self._refresh:
            return None
        return assignments

    def collect(self) -> Iterable[Family]:
        with self._lock:
            assignments, error, unavailable = self._assignments, self._error, self._unavailable
            age = self._clock() - self._last_success
        if assignments is None:
            if unavailable:
                raise CollectorUnavailable(error)
            raise RuntimeError(error)
        if age > STALE_AFTER_REFRESHES * self._refresh:
            raise RuntimeError(f"pod-resources view is {age:.0f}s old: {error}")
        family = Family(cat.POD_INFO)
        for p in attribute(assignments, self._devices()):
            family.add((self._node, p.gpu, p.uuid, p.namespace, p.pod, p.container), 1.0)
        return [family]

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gpu-pod-resources", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(self._refresh)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._lister.close()
