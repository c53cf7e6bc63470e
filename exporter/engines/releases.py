"""Which metric families each vLLM release exposes, derived from vLLM's own release sources.

`data/vllm_metrics_by_version.json` (repository root) was read from the sdists of every release
0.5.0 → 0.34.0; `derive()` condenses it to what the mapping needs and `exporter/engines/data/
vllm_releases.json` is that condensed form (regenerate: `python -m exporter.engines.releases --write`;
a test fails on drift). Only series the default engine exposes *without flags* count as expected:
conditional series (LoRA, speculative decoding, KV connectors) and hidden ones are known but not expected.
The Rust frontend (0.33.0 on, `VLLM_USE_RUST_FRONTEND=1`) is a second flavour of the same releases, with its
own expected families (`rust_frontend`): it lacks several that the Python frontend has.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from exporter.derived import derived_file_main
from exporter.versions import Version, parse_version

SOURCE = Path(__file__).resolve().parents[2] / "data" / "vllm_metrics_by_version.json"
DERIVED = Path(__file__).resolve().parent / "data" / "vllm_releases.json"


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


def derive(source: dict[str, Any]) -> dict[str, Any]:
    """The condensed form of the per-release table: expected families per release and all known families."""
    releases = {}
    for version, metrics in source["versions"].items():
        key = parse_version(version)
        expected = sorted(
            m["name"]
            for m in metrics
            if m["enabled_when"].startswith("always")
            and not m["enabled_when"].startswith("always (prometheus_fastapi")
            and not _hidden(m, key)
            and m["name"].startswith("vllm:")
        )
        releases[version] = expected
    known = sorted(
        {
            m["name"]
            for table in ("versions", "versions_non_default_engine")
            for ms in source[table].values()
            for m in ms
        }
        | set(source["index"])
    )
    # the Rust frontend registers every family at start-up: each is served (its TYPE line) without flags
    rust = {
        version: sorted({m["name"] for m in metrics if m["name"].startswith("vllm:")})
        for version, metrics in source.get("versions_rust_frontend", {}).items()
    }
    return {
        "source": "data/vllm_metrics_by_version.json",
        "releases": releases,
        "known": known,
        "rust_frontend": rust,
    }


def _hidden(metric: dict[str, Any], key: Version | None) -> bool:
    since = metric.get("hidden_since")
    if not isinstance(since, str) or key is None:
        return False
    return (parse_version(since) or ()) <= key


@cache
def load() -> Releases:
    data = json.loads(resources.files("exporter.engines").joinpath("data/vllm_releases.json").read_text())

    def table(releases: dict[str, list[str]]) -> tuple[Release, ...]:
        return tuple(
            sorted(
                (Release(v, parse_version(v) or (0,), frozenset(names)) for v, names in releases.items()),
                key=lambda r: r.key,
            )
        )

    rust = table(data["rust_frontend"])
    return Releases(table(data["releases"]), frozenset(data["known"]), (("rust_frontend", rust),))


def main(argv: list[str] | None = None) -> int:
    return derived_file_main(
        argv,
        description=__doc__.splitlines()[0],
        source=SOURCE,
        derived=DERIVED,
        derive=derive,
        module="exporter.engines.releases",  # as the user types it: __name__ is "__main__" under python -m
    )


if __name__ == "__main__":
    raise SystemExit(main())
