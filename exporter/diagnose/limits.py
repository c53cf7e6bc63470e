"""The thresholds the verdicts judge by: the alert bundle's values (`alerts/thresholds.py`), plus a few of
diagnose's own. The bundle's tooling is not part of the installed exporter, so the values are kept here and a
test holds them equal to the bundle's defaults; `from_thresholds` builds them from another `Thresholds`."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

EXPORTER_JOB = "llm-exporter"


@dataclass(frozen=True)
class Limits:
    ttft_p99_seconds: float = 2.0
    itl_p99_seconds: float = 0.2
    queue_waiting: float = 5
    imbalance_share: float = 0.8
    imbalance_min_waiting: float = 4
    route_timeout_fraction: float = 0.8
    cluster_view_stale_seconds: float = 600
    replica_startup_slow_seconds: float = 900
    latency_window: str = "5m"
    exporter_job: str = EXPORTER_JOB
    selector: str = f'job="{EXPORTER_JOB}"'
    # diagnose's own: one replica finishing this share of a model's requests (connections pinned to it)
    finished_share: float = 0.8
    # prefix-cache hit ratios of one model's replicas this far apart (routing ignores the cached prefix)
    prefix_hit_spread: float = 0.5
    # an engine bottleneck class holding this share of the window's evaluations
    bottleneck_window_share: float = 0.5

    @classmethod
    def from_thresholds(cls, thresholds: Any) -> Limits:
        """The limits of an `alerts.thresholds.Thresholds` (the fields both have; the rest default)."""
        return cls(**{f.name: getattr(thresholds, f.name) for f in fields(cls) if hasattr(thresholds, f.name)})


DEFAULT = Limits()
