"""Metric families and their writers: the Prometheus text format (0.0.4, the default) and OpenMetrics 1.0.

Our own small writers instead of prometheus_client's registry: families are built fresh per scrape from
catalogue specs, and engine series arrive with their label block already rendered, which keeps the
re-export path allocation-light (docs/performance.md compares the two). Which one a scrape gets is
negotiated from its `Accept` header (exporter/negotiation.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache

from exporter.catalogue.spec import MetricSpec, MetricType

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def escape_label_value(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def render_labels(pairs: Iterable[tuple[str, str]]) -> str:
    """`{a="1",b="2"}` for the given pairs, or "" when there are none."""
    body = ",".join(f'{key}="{escape_label_value(value)}"' for key, value in pairs)
    return f"{{{body}}}" if body else ""


def format_value(value: float) -> str:
    if -1e15 < value < 1e15:  # the common case first: finite (NaN compares false) and within int range
        whole = int(value)
        return f"{whole}" if whole == value else repr(float(value))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class Family:
    """The samples of one catalogue metric for one scrape."""

    __slots__ = ("samples", "spec")

    def __init__(self, spec: MetricSpec) -> None:
        self.spec = spec
        # (sample-name suffix such as "_bucket" or "", rendered label block, value)
        self.samples: list[tuple[str, str, float]] = []

    def add(self, label_values: Sequence[str], value: float) -> None:
        """Add one sample; `label_values` follow the order of `spec.labels`."""
        if len(label_values) != len(self.spec.labels):
            raise ValueError(f"{self.spec.name}: expected labels {self.spec.labels}, got {tuple(label_values)}")
        self.samples.append(("", _rendered(self.spec.labels, tuple(label_values)), float(value)))

    def add_rendered(self, suffix: str, label_block: str, value: float) -> None:
        """Add a sample whose label block is already rendered (the engine re-export path)."""
        self.samples.append((suffix, label_block, value))

    def __repr__(self) -> str:
        return f"Family({self.spec.name!r}, {len(self.samples)} samples)"


@lru_cache(maxsize=1 << 14)  # the same series (engine up, present, info) recur at every scrape
def _rendered(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    return render_labels(zip(names, values, strict=True))


def render(families: Iterable[Family]) -> str:
    """The text exposition of `families`; empty families are left out entirely."""
    out: list[str] = []
    for family in families:
        if not family.samples:
            continue
        spec = family.spec
        help_text = spec.help + (f" DEPRECATED: {spec.deprecated}" if spec.deprecated else "")
        help_text = help_text.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {spec.name} {help_text}\n# TYPE {spec.name} {spec.type.value}\n")
        name = spec.name
        out.extend(f"{name}{suffix}{labels} {format_value(value)}\n" for suffix, labels, value in family.samples)
    return "".join(out)


def render_openmetrics(families: Iterable[Family]) -> str:
    """The OpenMetrics 1.0 exposition of `families`: counters named without `_total` in their metadata,
    `# UNIT` where the name ends in the unit, `# EOF` at the end. Counters' optional `_created` is left out."""
    out: list[str] = []
    for family in families:
        if not family.samples:
            continue
        spec = family.spec
        name = spec.name.removesuffix("_total") if spec.type is MetricType.COUNTER else spec.name
        help_text = spec.help + (f" DEPRECATED: {spec.deprecated}" if spec.deprecated else "")
        help_text = escape_label_value(help_text)  # OpenMetrics escapes HELP like a label value
        out.append(f"# TYPE {name} {spec.type.value}\n")
        if spec.unit and name.endswith(f"_{spec.unit}"):
            out.append(f"# UNIT {name} {spec.unit}\n")
        out.append(f"# HELP {name} {help_text}\n")
        sample = spec.name
        out.extend(f"{sample}{suffix}{labels} {format_value(value)}\n" for suffix, labels, value in family.samples)
    out.append("# EOF\n")
    return "".join(out)
