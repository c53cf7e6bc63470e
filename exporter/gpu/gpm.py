"""GPM (GPU performance monitoring, Hopper and newer) sampling: rates between two samples per device.

GPM metrics are computed from two samples taken more than 100 ms apart. Each device keeps two sample buffers
that are ping-ponged across scrapes: the previous scrape's sample is the first sample of this one, so a scrape
costs one `SampleGet` and one `MetricsGet` and the rate covers the whole scrape interval. A scrape that comes
too soon after the last sample reuses the last result instead of computing a rate over a too-short window.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from exporter.gpu.fields import Field
from exporter.sources.nvml import GPM_DRAM_BW_UTIL, GPM_SM_OCCUPANCY, Nvml, NvmlError, NvmlErrorKind, Sample

MIN_INTERVAL_SECONDS = 0.1  # NVML: the samples must be more than 100 ms apart
METRIC_IDS: dict[int, Field] = {GPM_DRAM_BW_UTIL: Field.BANDWIDTH_UTILIZATION, GPM_SM_OCCUPANCY: Field.SM_OCCUPANCY}

Readout = dict[Field, float | NvmlErrorKind]


@dataclass
class _Stream:
    previous: Sample
    spare: Sample
    taken_at: float
    last: Readout = field(default_factory=dict)


class GpmSampler:
    """The GPM sample pairs of all devices, keyed by device UUID."""

    def __init__(
        self, nvml: Nvml, min_interval: float = MIN_INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._nvml = nvml
        self._min_interval = min_interval
        self._clock = clock
        self._streams: dict[str, _Stream] = {}

    def read(self, key: str, take: Callable[[Sample], None]) -> Readout:
        """GPM fields of device `key`; `take(sample)` fills a sample for it (SampleGet or MigSampleGet).

        The first call only takes the first sample and returns {}: there is no rate yet, and a made-up value
        would be worse than an absent one. Raises `NvmlError` (and forgets the device) when NVML fails.
        """
        now = self._clock()
        stream = self._streams.get(key)
        if stream is None:
            self._start(key, take, now)
            return {}
        if now - stream.taken_at <= self._min_interval:
            return stream.last
        try:
            take(stream.spare)
            results = self._nvml.gpm_metrics(stream.previous, stream.spare, tuple(METRIC_IDS))
        except NvmlError:
            self.forget(key)
            raise
        stream.previous, stream.spare, stream.taken_at = stream.spare, stream.previous, now
        stream.last = {
            METRIC_IDS[metric_id]: (value.kind if isinstance(value, NvmlError) else value / 100.0)
            for metric_id, value in results.items()
            if metric_id in METRIC_IDS
        }
        return stream.last

    def _start(self, key: str, take: Callable[[Sample], None], now: float) -> None:
        first = self._nvml.gpm_sample_alloc()
        try:
            second = self._nvml.gpm_sample_alloc()
        except NvmlError:
            self._nvml.gpm_sample_free(first)
            raise
        try:
            take(first)
        except NvmlError:
            self._free(first, second)
            raise
        self._streams[key] = _Stream(first, second, now)

    def retain(self, keys: Iterable[str]) -> None:
        """Forget the devices not in `keys` (removed, reconfigured MIG instances), freeing their samples."""
        keep = set(keys)
        for key in [k for k in self._streams if k not in keep]:
            self.forget(key)

    def forget(self, key: str) -> None:
        stream = self._streams.pop(key, None)
        if stream is not None:
            self._free(stream.previous, stream.spare)

    def close(self) -> None:
        for key in list(self._streams):
            self.forget(key)

    def __len__(self) -> int:
        return len(self._streams)

    def _free(self, *samples: Sample) -> None:
        for sample in samples:
            # a lost GPU's samples are host memory; if freeing fails there is nothing left to do
            with contextlib.suppress(NvmlError):
                self._nvml.gpm_sample_free(sample)
