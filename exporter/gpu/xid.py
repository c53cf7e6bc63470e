"""XID errors as counters: NVML's event API (nvmlEventSetWait) read in a thread of its own.

A scrape never calls NVML for XIDs: it reads the counts this thread keeps. The thread waits at most
`wait_ms` per call, so a live driver hands it control back every second; when a call does not come back
(a hung driver) the view turns stale after `stall_seconds` and every watched GPU reports the field
unavailable with reason `timeout` — the counts seen so far still stand (they only ever grow).

A GPU whose driver does not offer XID events (nvmlDeviceGetSupportedEventTypes without the bit, or a
registration that fails) reports the field unavailable with the reason, never a count of 0. Counts are kept
per GPU UUID for the life of the process, across NVML reloads, so they behave as Prometheus counters.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from exporter.sources.nvml import EVENT_XID_CRITICAL, EventSet, Handle, Nvml, NvmlError, NvmlErrorKind

log = logging.getLogger(__name__)

WAIT_MS = 1000
RETRY_SECONDS = 30.0  # after NVML is lost or the setup failed
STALL_SECONDS = 10.0  # no answer from nvmlEventSetWait for this long: the view is stale


@dataclass(frozen=True)
class XidView:
    """What a scrape reports: counts by (uuid, xid), and per GPU UUID its watch state."""

    counts: dict[tuple[str, int], int] = field(default_factory=dict)
    watch: dict[str, NvmlErrorKind | None] = field(default_factory=dict)  # None: watched and answering

    def state(self, uuid: str) -> NvmlErrorKind | None:
        """None when `uuid` is watched and the thread answers; else why its XIDs are unavailable."""
        return self.watch.get(uuid, NvmlErrorKind.UNAVAILABLE)  # not registered (yet)


class XidWatcher:
    def __init__(
        self,
        nvml: Nvml,
        *,
        ready: Callable[[], bool],
        wait_ms: int = WAIT_MS,
        retry_seconds: float = RETRY_SECONDS,
        stall_seconds: float = STALL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._nvml = nvml
        self._ready = ready  # NVML is initialised (the GPU collector owns init and shutdown)
        self._wait_ms = wait_ms
        self._retry = retry_seconds
        self._stall = stall_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, int]] = Counter()
        self._watch: dict[str, NvmlErrorKind | None] = {}
        self._set: EventSet | None = None
        self._heartbeat = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def view(self) -> XidView:
        with self._lock:
            watch = dict(self._watch)
            if self._set is not None and self._clock() - self._heartbeat > self._stall:
                watch = {uuid: NvmlErrorKind.TIMEOUT if w is None else w for uuid, w in watch.items()}
            return XidView(dict(self._counts), watch)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gpu-xid-events", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self._wait_ms / 1000 + 1)  # a hung driver keeps its daemon thread
            self._thread = None
        self._free()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._set is None and not self.setup():
                self._stop.wait(self._retry)
                continue
            self.poll()

    def setup(self) -> bool:
        """Create the event set and register every GPU for XID events; False when NVML is not there."""
        if not self._ready():
            return False
        nvml = self._nvml
        try:
            event_set = nvml.event_set_create()
        except NvmlError as exc:
            log.info("XID events unavailable: %s", exc)
            with self._lock:
                self._watch = dict.fromkeys(self._watch, exc.kind)
            return False
        watch: dict[str, NvmlErrorKind | None] = {}
        try:
            for index in range(nvml.device_count()):
                try:
                    handle = nvml.handle_by_index(index)
                    uuid = nvml.uuid(handle)
                except NvmlError:
                    continue  # a GPU that cannot be named: llm_gpu_up already says so
                watch[uuid] = self._register(handle, event_set)
        except NvmlError as exc:
            log.info("XID events: listing GPUs failed: %s", exc)
            with contextlib.suppress(NvmlError):
                nvml.event_set_free(event_set)
            return False
        with self._lock:
            self._set, self._watch, self._heartbeat = event_set, watch, self._clock()
        return True

    def _register(self, handle: Handle, event_set: EventSet) -> NvmlErrorKind | None:
        nvml = self._nvml
        try:
            if not nvml.supported_event_types(handle) & EVENT_XID_CRITICAL:
                return NvmlErrorKind.NOT_SUPPORTED
            nvml.register_events(handle, EVENT_XID_CRITICAL, event_set)
        except NvmlError as exc:
            return exc.kind
        return None

    def poll(self) -> None:
        """One nvmlEventSetWait: count what it brings; on a lost NVML or GPU, set up again later."""
        event_set = self._set
        if event_set is None:
            return
        try:
            event = self._nvml.event_set_wait(event_set, self._wait_ms)
            uuid = self._nvml.uuid(event.device) if event is not None else ""
        except NvmlError as exc:
            log.warning("XID event wait failed (%s); registering again in %.0fs", exc, self._retry)
            self._free()
            self._stop.wait(self._retry)
            return
        with self._lock:
            self._heartbeat = self._clock()
            if event is not None and event.event_type & EVENT_XID_CRITICAL:
                self._counts[(uuid, event.data)] += 1
        if event is not None:
            log.warning("XID %d on GPU %s", event.data, uuid)

    def _free(self) -> None:
        with self._lock:
            event_set, self._set = self._set, None
            self._watch = dict.fromkeys(self._watch, NvmlErrorKind.UNAVAILABLE)
        if event_set is not None:
            with contextlib.suppress(NvmlError):
                self._nvml.event_set_free(event_set)
