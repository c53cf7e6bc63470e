"""The release table of an engine: which metric families each release exposes by default, and which it knows.

One shape for every engine, vLLM included: `engine_releases.py` derives each engine's table from its released
sources into `exporter/engines/data/` (vLLM's in `vllm_releases.json`, the others' in `engine_releases.json`),
and `load(engine)` reads any of them. Only series a release exposes *without flags* count as expected:
conditional series (LoRA, speculative decoding, KV connectors) and hidden ones are known but not expected.
A second frontend of the same releases (vLLM's Rust frontend, 0.33.0 on) is a flavour with its own expected
families.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from typing import Any

from exporter.versions import Version

DATA = ("data/vllm_releases.json", "data/engine_releases.json")  # the derived tables, in exporter.engines


@dataclass(frozen=True)
class Release:
    version: str
    key: Version
    expected: frozenset[str]  # families exposed by default, without flags
    summaries: frozenset[str] = frozenset()  # families exposed as summaries (TGI < 0.5): not histograms
    build: int | None = None  # llama.cpp: the build number (`bNNNN`) of the release's commit, where known


@dataclass(frozen=True)
class Releases:
    releases: tuple[Release, ...]  # oldest first
    known: frozenset[str]  # every family any release can expose (hidden and conditional included)
    # (flavour, its releases oldest first): a second frontend of the same releases (vLLM's Rust frontend)
    flavours: tuple[tuple[str, tuple[Release, ...]], ...] = ()

    def flavoured(self, flavour: str, release: Release) -> Release:
        """`release` as `flavour` serves it: that flavour's release of the same version (else the newest one
        not newer, the oldest for anything older); `release` itself when the table has no such flavour."""
        table = dict(self.flavours).get(flavour)
        if not table:
            return release
        exact = [r for r in table if r.version == release.version]
        return exact[0] if exact else Releases(table, self.known).at(release.key)

    def at(self, version: Version) -> Release:
        """The newest release not newer than `version` (the oldest for anything older, the newest beyond)."""
        chosen = self.releases[0]
        for release in self.releases:
            if release.key <= version:
                chosen = release
        return chosen

    def by_build(self, build: int) -> Release | None:
        """The newest release whose known build number is not above `build`; None below every known one (the
        releases before the first known build cannot be told apart by a number)."""
        chosen = None
        for release in self.releases:
            if release.build is not None and release.build <= build:
                chosen = release
        return chosen

    @cached_property
    def recognised(self) -> frozenset[str]:
        """The family names of a body that some release exposes: `X_created` (the creation times of a counter
        or histogram) counts as `X`, and a counter declared without `_total` as the counter."""
        bare = self.known | {family.removesuffix("_total") for family in self.known}
        return frozenset(f for f in bare if not f.endswith("_created")) | {f + "_created" for f in bare}

    @property
    def newest(self) -> Release:
        return self.releases[-1]

    def infer(self, families: set[str], relevant: frozenset[str]) -> Release:
        """The release whose expected families best match `families` (Jaccard; newest wins ties).

        Only `relevant` families count: the names that renames touched tell releases apart, while series
        that many releases share would drown them.
        """
        best, best_score = self.newest, -1.0
        found = families & relevant
        for release in self.releases:
            expected = release.expected & relevant
            union = len(expected | found) or 1
            score = len(expected & found) / union
            if score >= best_score:
                best, best_score = release, score
        return best


def _release(entry: Mapping[str, Any]) -> Release:
    return Release(
        entry["version"],
        tuple(entry["key"]),
        frozenset(entry["expected"]),
        frozenset(entry.get("summaries", ())),
        entry.get("build"),
    )


def table(entry: Mapping[str, Any]) -> Releases:
    """An engine's table from its derived form: releases oldest first (each with its ordering key), the
    families known, and the releases of each flavour."""
    flavours = tuple((name, tuple(map(_release, rs))) for name, rs in entry.get("flavours", {}).items())
    return Releases(tuple(map(_release, entry["releases"])), frozenset(entry["known"]), flavours)


@cache
def _derived() -> dict[str, Any]:
    files = resources.files("exporter.engines")
    return {k: v for path in DATA for k, v in json.loads(files.joinpath(path).read_text())["engines"].items()}


@cache
def load(engine: str) -> Releases:
    """The release table of `engine` (KeyError for an engine whose table is not derived: trtllm's is written)."""
    return table(_derived()[engine])
