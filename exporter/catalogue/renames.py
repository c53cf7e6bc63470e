"""Renamed metrics: the old name is still served for one minor release, then removed.

A rename moves the catalogue entry to its new name and adds a `Rename` here. From `since` the exporter serves
the same samples under both names, the old one with `DEPRECATED: renamed to <new>` in its HELP, so that
dashboards, alerts and autoscalers keep working while they move; from `removed_in` (the next minor release)
only the new name. A test fails once the running version reaches `removed_in` while the entry is still
here, so the removal is never forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.catalogue.spec import MetricSpec
from exporter.versions import parse_version


@dataclass(frozen=True, slots=True)
class Rename:
    old: str  # the name dashboards used until `since`
    new: MetricSpec  # the catalogue entry under its new name
    since: str  # the release that renamed it ("0.2.0")
    removed_in: str  # the next minor release ("0.3.0"): the old name is no longer served

    def deprecated_spec(self) -> MetricSpec:
        """The catalogue entry under its old name, marked deprecated."""
        spec = self.new
        note = f"renamed to {spec.name} in {self.since}; this name is removed in {self.removed_in}."
        return MetricSpec(
            self.old, spec.type, spec.unit, spec.help, spec.labels, spec.subsystem, spec.role, spec.stability, note
        )


def version_tuple(version: str) -> tuple[int, ...]:
    """ "0.2.0" → (0, 2, 0); a suffix such as "rc1" or ".dev3" ends the numbers; () for no number."""
    return parse_version(version) or ()


def active(renames: tuple[Rename, ...], version: str) -> tuple[Rename, ...]:
    """The renames whose old name `version` still serves."""
    current = version_tuple(version)
    return tuple(r for r in renames if version_tuple(r.since) <= current < version_tuple(r.removed_in))


def errors(renames: tuple[Rename, ...], catalogue: set[str], version: str) -> list[str]:
    """What is wrong with `renames` at `version`: a grace period longer than one minor release, an old name
    still in the catalogue, or an entry left here once its old name is no longer served."""
    out = []
    for r in renames:
        since, removed = version_tuple(r.since), version_tuple(r.removed_in)
        if len(since) < 2 or removed[:2] != (since[0], since[1] + 1):
            out.append(f"{r.old}: removed_in {r.removed_in} must be the minor release after {r.since}")
        if r.old in catalogue:
            out.append(f"{r.old}: renamed to {r.new.name} but still a catalogue entry")
        if r.new.name not in catalogue:
            out.append(f"{r.old}: its new name {r.new.name} is not in the catalogue")
        if version_tuple(version) >= removed:
            out.append(f"{r.old}: no longer served from {r.removed_in}; delete this rename")
    return out


RENAMES: tuple[Rename, ...] = ()  # none yet: the names of 0.1 are the first stable set
