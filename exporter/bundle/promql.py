"""Moved to `exporter.check.promql`; kept so existing imports keep working."""

from exporter.check.promql import (
    AGGREGATIONS,
    DURATIONS,
    KEYWORDS,
    Matcher,
    PromQLSyntaxError,
    Selector,
    metric_names,
    rename,
    selectors,
    substitute,
)

__all__ = [
    "AGGREGATIONS",
    "DURATIONS",
    "KEYWORDS",
    "Matcher",
    "PromQLSyntaxError",
    "Selector",
    "metric_names",
    "rename",
    "selectors",
    "substitute",
]
