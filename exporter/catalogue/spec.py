"""The shape of a catalogue entry.

Every metric the exporter emits is declared once as a `MetricSpec`; collectors build their families from
these specs, `docs/metrics.md` is generated from them, and tests check that dashboards and alerts only use
names declared here.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass


class MetricType(enum.StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"
    HISTOGRAM = "histogram"


class Stability(enum.StrEnum):
    STABLE = "stable"  # part of the contract: renames need a deprecation entry
    EXPERIMENTAL = "experimental"


HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")  # a histogram's (and a summary's _sum/_count) sample names
_SAMPLE_SUFFIX = re.compile(r"_(bucket|sum|count|created)$")


def family_name(sample: str) -> str:
    """The family a sample name belongs to: without a histogram's, a summary's or a creation time's suffix."""
    return _SAMPLE_SUFFIX.sub("", sample)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One exported metric family: its name, type, unit, help text and label names."""

    name: str
    type: MetricType
    unit: str  # base unit ("seconds", "bytes", "ratio", ...) or "" for counts and info metrics
    help: str
    labels: tuple[str, ...]
    subsystem: str  # "engine", "gpu", "cluster" or "exporter": the section of docs/metrics.md
    role: str  # "node", "cluster" or "any": which `serve --role` exports it
    stability: Stability = Stability.STABLE
    deprecated: str = ""  # "use X instead; removed in Y" when set

    def __hash__(self) -> int:
        # names are unique (equal specs share it): the generated hash would hash every field, the two enums through
        # Python calls, at each of the mapping's dict look-ups of every scrape
        return hash(self.name)

    @property
    def suffixes(self) -> tuple[str, ...]:
        """What its sample names add to its name in the text format: a histogram's three, else none ("")."""
        return HISTOGRAM_SUFFIXES if self.type is MetricType.HISTOGRAM else ("",)

    @property
    def sample_names(self) -> tuple[str, ...]:
        """The sample names a family of this type exposes in the text format."""
        return tuple(self.name + suffix for suffix in self.suffixes)


def _spec(type_: MetricType, default_unit: str) -> Callable[..., MetricSpec]:
    def make(
        name: str,
        help: str,
        labels: tuple[str, ...],
        *,
        subsystem: str,
        role: str,
        unit: str = default_unit,
        stability: Stability = Stability.STABLE,
        deprecated: str = "",
    ) -> MetricSpec:
        return MetricSpec(name, type_, unit, help, labels, subsystem, role, stability, deprecated)

    return make


gauge = _spec(MetricType.GAUGE, "")
counter = _spec(MetricType.COUNTER, "")
histogram = _spec(MetricType.HISTOGRAM, "seconds")
