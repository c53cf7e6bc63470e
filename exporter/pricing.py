"""Cluster role: the configured GPU prices (`cost.gpu_hour_prices`) as `llm_gpu_price_per_second{name, currency}`.

The price is configuration, not a measurement: the collector exports it so that the cost recording rules
(`llm-inference.cost`) can join it to the GPUs by model name. No price is shipped: with none configured the
collector is not built, and a GPU model without a price has no series (its cost rules give no sample).
"""

from __future__ import annotations

from collections.abc import Iterable

from exporter.catalogue import cluster
from exporter.collect import Collector
from exporter.config import Cost
from exporter.exposition import Family

SECONDS_PER_HOUR = 3600.0


def price_families(cost: Cost) -> list[Family]:
    """One `llm_gpu_price_per_second` sample per priced GPU model, sorted by name."""
    family = Family(cluster.GPU_PRICE)
    for name, per_hour in sorted(cost.gpu_hour_prices.items()):
        family.add((name, cost.currency), per_hour / SECONDS_PER_HOUR)
    return [family]


class PriceCollector:
    name = "prices"

    def __init__(self, cost: Cost) -> None:
        self._cost = cost

    def collect(self) -> Iterable[Family]:
        return price_families(self._cost)


def build_price_collectors(cost: Cost) -> list[Collector]:
    """The price collector when prices are configured, else none."""
    return [PriceCollector(cost)] if cost.gpu_hour_prices else []
