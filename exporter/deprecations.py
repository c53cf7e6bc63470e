"""Serves renamed metrics under their old names too, during their grace release (exporter.catalogue.renames)."""

from __future__ import annotations

from collections.abc import Sequence

import exporter
from exporter.catalogue import renames as catalogue
from exporter.catalogue.renames import Rename, active
from exporter.exposition import Family


def with_old_names(
    families: Sequence[Family], version: str | None = None, renames: tuple[Rename, ...] | None = None
) -> list[Family]:
    """`families`, plus a deprecated copy under the old name of each family renamed within its grace release
    (default: the catalogue's renames and this release).

    The copy shares the samples (no second list per scrape); empty families stay empty under both names.
    """
    version = exporter.__version__ if version is None else version
    renames = catalogue.RENAMES if renames is None else renames
    grace = {r.new.name: r for r in active(renames, version)}
    if not grace:
        return list(families)
    out: list[Family] = []
    for family in families:
        out.append(family)
        rename = grace.get(family.spec.name)
        if rename is not None:
            old = Family(rename.deprecated_spec())
            old.samples = family.samples
            out.append(old)
    return out
