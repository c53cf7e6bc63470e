"""The GPU collector (NVML, every GPU of the node) and its wiring with pod attribution.

No NVML on this machine (a CPU node, a laptop, no driver yet): `collect` raises `CollectorUnavailable`, so
`llm_exporter_collector_success{collector="gpu"}` is 0, `llm_exporter_collector_unavailable` is 1, and the
rest of the exporter works. With `gpu.enabled: true` the GPUs are expected, so the same state is a failure
(unavailable 0, and `LLMExporterCollectorFailing` fires). Loading is
retried at most once per `INIT_RETRY_SECONDS`: a containerised driver can come up after the exporter.
NVML lost mid-run (the driver unloaded or upgraded under a running exporter) is the same state: the
collector drops its handles and samples, and loads NVML again.

XID events are waited for in a thread of their own (exporter/gpu/xid.py); a scrape reads its counts. Per-pod
and unattributed memory (exporter/gpu/processes.py) are rendered from the same scrape's process lists; a
failure there degrades only those series.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from exporter.collect import Collector, CollectorUnavailable
from exporter.config import Gpu
from exporter.exposition import Family
from exporter.gpu import render
from exporter.gpu.fields import Field
from exporter.gpu.gpm import GpmSampler
from exporter.gpu.processes import ProcessAttribution
from exporter.gpu.readings import GpuReader
from exporter.gpu.xid import XidWatcher
from exporter.sources.nvml import Nvml, NvmlError, NvmlErrorKind

if TYPE_CHECKING:
    from exporter.gpu.readings import DeviceReading

log = logging.getLogger(__name__)

INIT_RETRY_SECONDS = 60.0


class NvmlRequiredError(RuntimeError):
    """gpu.enabled is true and NVML does not load: reported as a failed collector, not an absent one."""


class GpuCollector:
    name = "gpu"

    def __init__(
        self,
        nvml: Nvml,
        *,
        node: str,
        required: bool = False,
        sampler: GpmSampler | None = None,
        xid: XidWatcher | None = None,
        attribution: ProcessAttribution | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._nvml = nvml
        self._node = node  # every GPU series names its node: dashboards filter on it, Prometheus adds none
        self._required = required  # gpu.enabled: true: a missing NVML is an error, not a fact of the machine
        self._clock = clock
        self._sampler = sampler if sampler is not None else GpmSampler(nvml)
        self._reader = GpuReader(nvml, self._sampler)
        self._lock = threading.Lock()  # concurrent scrapes share the GPM sample pairs
        self._initialised = False
        self._init_error = ""
        self._next_attempt = 0.0
        self._driver_version = ""
        self._devices: dict[str, str] = {}
        # XID events wait in their own thread: a scrape reads its counts, never the event API
        self._xid = xid if xid is not None else XidWatcher(nvml, ready=lambda: self._initialised)
        self._attribution = attribution  # per-pod memory: None where no pod source is configured

    def start(self) -> None:
        """Load NVML and take the first GPM samples, so that the first scrape already has rates."""
        ensured = self._ensure()
        if self._attribution is not None:
            self._attribution.start()
        self._xid.start()  # registers the GPUs once NVML is initialised
        if not ensured:
            return
        try:
            self.collect()
        except NvmlError as exc:
            log.warning("first GPU reading failed: %s", exc)

    def collect(self) -> Iterable[Family]:
        if not self._ensure():
            raise self._absent()
        with self._lock:
            try:
                readings = self._reader.read_all()
            except NvmlError as exc:
                if exc.kind is not NvmlErrorKind.UNAVAILABLE:
                    raise  # a failed scrape (collector_success 0); the next one tries again
                self._lost(exc)
                raise self._absent() from exc
        devices = {r.uuid: r.gpu for r in readings if r.uuid}
        devices.update((m.uuid, m.gpu) for r in readings for m in r.migs)
        self._devices = devices  # replaced whole: readers in other threads see one scrape or the next
        pods = self._pod_families(readings)
        return [*render.families(readings, self._driver_version, self._node, self._xid.view()), *pods]

    def _pod_families(self, readings: list[DeviceReading]) -> list[Family]:
        """Per-pod and unattributed memory; a failure here degrades only these (field pod_memory)."""
        if self._attribution is None:
            return []
        try:
            return self._attribution.families(self._node, readings)
        except Exception:  # any failure of the join: the GPU series still flow
            log.warning("GPU memory attribution failed", exc_info=True)
            for r in readings:
                if r.up:
                    r.errors[Field.POD_MEMORY] = NvmlErrorKind.ERROR
            return []

    def devices(self) -> dict[str, str]:
        """UUID (GPU-… and MIG-…) → NVML index of the GPU, as of the last scrape."""
        return self._devices

    def close(self) -> None:
        self._xid.close()
        if self._attribution is not None:
            self._attribution.close()
        with self._lock:
            self._sampler.close()
            if self._initialised:
                self._initialised = False
                try:
                    self._nvml.shutdown()
                except NvmlError as exc:
                    log.warning("NVML shutdown failed: %s", exc)

    def _absent(self) -> Exception:
        """No NVML: a fact of a CPU node under gpu.enabled auto, a failure (that alerts) under true."""
        if self._required:
            return NvmlRequiredError(f"{self._init_error} (gpu.enabled: true)")
        return CollectorUnavailable(self._init_error)

    def _lost(self, exc: NvmlError) -> None:
        """NVML went away mid-run (driver unloaded or upgraded): drop its state and load it again at once."""
        log.warning("NVML lost mid-run (%s); reloading", exc)
        self._sampler.close()
        self._initialised = False
        self._next_attempt = 0.0  # the first retry is immediate; then the usual INIT_RETRY_SECONDS
        self._init_error = f"NVML lost mid-run: {exc}"
        with contextlib.suppress(NvmlError):  # already gone
            self._nvml.shutdown()

    def _ensure(self) -> bool:
        with self._lock:
            if self._initialised:
                return True
            now = self._clock()
            if now < self._next_attempt:
                return False
            self._next_attempt = now + INIT_RETRY_SECONDS
            try:
                self._nvml.init()
                self._driver_version = self._nvml.driver_version()
            except NvmlError as exc:
                self._init_error = f"NVML not available: {exc}"
                level = logging.ERROR if self._required else logging.INFO
                log.log(
                    level,
                    "%s (gpu.enabled=%s; next try in %.0fs)",
                    self._init_error,
                    "true" if self._required else "auto",
                    INIT_RETRY_SECONDS,
                )
                return False
            self._initialised = True
            return True


def build_gpu_collectors(config: Gpu, kubeconfig: str | None = None) -> list[Collector]:
    """The node role's GPU collectors: NVML readings, and pod attribution from the kubelet; none when off."""
    return [] if config.enabled == "false" else gpu_collectors(config, kubeconfig)


def gpu_collectors(config: Gpu, kubeconfig: str | None = None) -> list[Collector]:
    """The GPU collector and the GPU pods collector it reads its pods from (the `gpu` row of the table)."""
    from functools import partial

    from exporter.gpu.nodepods import NodePods
    from exporter.gpu.pods import GpuPodsCollector
    from exporter.sources.host import node_name
    from exporter.sources.nvml import PynvmlSource
    from exporter.sources.podresources import PodResourcesClient
    from exporter.sources.proc import read_cgroup

    node = node_name()
    pods = GpuPodsCollector(
        PodResourcesClient(config.pod_resources_socket),
        node=node,
        devices=lambda: gpu.devices(),  # noqa: PLW0108 - `gpu` is bound below (it needs the assignments)
        refresh_seconds=config.pod_resources_refresh_seconds,
    )
    attribution = ProcessAttribution(
        directory=NodePods(node, kubeconfig),
        assignments=pods.assignments,
        cgroup_of=partial(read_cgroup, config.proc_root),
        idle_after_seconds=config.allocated_idle_seconds,
        idle_utilization=config.allocated_idle_utilization,
    )
    gpu = GpuCollector(PynvmlSource(), node=node, required=config.enabled == "true", attribution=attribution)
    return [gpu, pods]
