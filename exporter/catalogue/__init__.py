"""THE metric catalogue: every metric the exporter emits, in one place.

Domain modules (`engine`, `gpu`, `cluster`, `exporter_self`) declare their specs; this package joins them.
`docs/metrics.md` is generated from `ALL` (see `exporter.bundle.docs`).
"""

from __future__ import annotations

from exporter.catalogue import audit, cluster, engine, exporter_self, gateway, gpu, replicas, routes, watchdog
from exporter.catalogue.spec import MetricSpec, MetricType, Stability

ALL: tuple[MetricSpec, ...] = (
    *engine.METRICS,
    *gateway.METRICS,
    *gpu.METRICS,
    *cluster.METRICS,
    *routes.METRICS,
    *replicas.METRICS,
    *watchdog.METRICS,
    *audit.METRICS,
    *exporter_self.METRICS,
)
BY_NAME: dict[str, MetricSpec] = {spec.name: spec for spec in ALL}
if len(BY_NAME) != len(ALL):  # pragma: no cover - a programming error caught at import
    raise RuntimeError("duplicate metric name in the catalogue")


def sample_names() -> dict[str, MetricSpec]:
    """Every exposed sample name (histograms: _bucket/_sum/_count) → its spec."""
    return {sample: spec for spec in ALL for sample in spec.sample_names}


__all__ = ["ALL", "BY_NAME", "MetricSpec", "MetricType", "Stability", "sample_names"]
