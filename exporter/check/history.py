"""What happened to each engine metric name, release by release: for the diagnosis of an empty query.

`data/vllm_history.json` is condensed from vLLM's per-release metric table (`data/vllm_metrics_by_version.json`
at the repository root, read from every release's sdist): per family the first release that has it, the last
that exposes it by default, the release that hid it (behind `--show-hidden-metrics-for-version`) and the
first release without it; plus the successor that vLLM's own HELP text names ("DEPRECATED: Use X instead").
Regenerate with `python -m exporter.check.history --write`; a test fails on drift.
Every engine the registry knows gets its `EngineHistory` by one rule (`engines()`): the names its per-name
history knows (vLLM's, from this table: hidden releases, HELP-named successors), then the source families
that only its release table places (`exporter.engines.history`). llm-d's endpoint picker comes from its
producer table (`exporter.engines.engine_releases.producer`): per router release its families, the renames
its help texts declare (written side by side from the release that adds the successor) and the label one of
them swapped (`scheduler_attempts_total`: pod_name → endpoint_name).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from exporter.catalogue.engine import CAPACITY
from exporter.catalogue.spec import family_name
from exporter.check.tables import EPP_PREFIXES
from exporter.derived import derived_file_main
from exporter.engines import registry
from exporter.engines.engine import Engine
from exporter.engines.engine_releases import producer
from exporter.engines.history import engine_history
from exporter.engines.releases import Releases
from exporter.versions import parse_version

SOURCE = Path(__file__).resolve().parents[2] / "data" / "vllm_metrics_by_version.json"
DERIVED = Path(__file__).resolve().parent / "data" / "vllm_history.json"
_SUCCESSOR = re.compile(r"DEPRECATED: Use (\S+?) instead")


@dataclass(frozen=True)
class NameHistory:
    name: str
    first: str  # first release exposing it
    last: str  # last release whose code has it (hidden or not)
    removed_in: str | None  # first release without it; None while the newest release still has it
    hidden_since: str | None  # the release from which only a flag shows it
    successor: str | None  # the family that carries the same quantity now
    stable: str | None  # this project's canonical llm_* name for it
    renamed_in: str | None = None  # a declared rename: the first release writing the successor beside it
    label_renames: tuple[tuple[str, str], ...] = ()  # (label, the successor's label) the rename swapped


@dataclass(frozen=True)
class EngineHistory:
    engine: str
    prefix: str | tuple[str, ...]
    releases: Releases
    names: dict[str, NameHistory]
    sources: frozenset[str]  # families that tell releases apart (for inferring the running release)

    def lookup(self, name: str) -> NameHistory | None:
        """The history of a family or of one of its samples (`_bucket`, `_sum`, `_count`, `_total`)."""
        for candidate in (name, family_name(name), name + "_total"):
            if candidate in self.names:
                return self.names[candidate]
        return None


def derive(source: dict[str, Any]) -> dict[str, Any]:
    versions = sorted(source["versions"], key=lambda v: parse_version(v) or (0,))
    seen: dict[str, dict[str, Any]] = {}
    for version in versions:
        for metric in source["versions"][version]:
            entry = seen.setdefault(metric["name"], {"first": version, "successor": None})
            entry["last"] = version
            if not str(metric.get("enabled_when", "")).startswith("hidden"):
                entry["default_until"] = version
            if metric.get("hidden_since"):  # the first release that hid it, not the last that still had it
                entry.setdefault("hidden_since", metric["hidden_since"])
            if m := _SUCCESSOR.search(str(metric.get("help", ""))):
                entry["successor"] = m.group(1)
    for entry in seen.values():
        after = versions.index(entry["last"]) + 1
        entry["removed_in"] = versions[after] if after < len(versions) else None
    return {"source": "data/vllm_metrics_by_version.json", "versions": versions, "names": seen}


@cache
def engines() -> tuple[EngineHistory, ...]:
    """Every engine the registry knows, each by one rule, then llm-d's endpoint picker."""
    return (*(_from_registry(e) for e in registry.ENGINES.values()), _from_producer("llmd_epp", EPP_PREFIXES))


@cache
def _named() -> dict[str, dict[str, Any]]:
    """Engine → its per-name history, where one is derived (vLLM's: only its source records every family's
    help text and hidden releases)."""
    data = json.loads(resources.files("exporter.check").joinpath("data/vllm_history.json").read_text())
    return {"vllm": data["names"]}


def _from_producer(name: str, prefixes: tuple[str, ...]) -> EngineHistory:
    """A producer's history: each family's releases, its declared successor (followed to the name written on
    the newest release: llm_d_router_epp_x → llm_d_epp_x) and the release from which both are written."""
    table = producer(name)
    releases = table.releases.releases
    versions = [r.version for r in releases]
    written = {n: [r.version for r in releases if n in r.expected] for n in table.releases.known}

    def successor(family: str) -> str | None:
        seen, new = {family}, table.renamed.get(family)
        while new is not None and new in table.renamed and table.renamed[new] not in seen:
            seen.add(new)
            new = table.renamed[new]
        return new

    names = {}
    for family, where in written.items():
        after = versions.index(where[-1]) + 1 if where else len(versions)
        new = successor(family)
        names[family] = NameHistory(
            family,
            where[0] if where else "",
            where[-1] if where else "",
            versions[after] if where and after < len(versions) else None,
            None,
            new,
            None,
            next(iter(written.get(new) or []), None) if new else None,
            tuple(sorted(table.label_renames.get(family, {}).items())),
        )
    return EngineHistory(name, prefixes, table.releases, names, frozenset(n for n, w in written.items() if w))


def _from_registry(engine: Engine) -> EngineHistory:
    """An engine's history: every family its per-name history knows (first and last release, hidden, the
    successor its help text names), then the families behind each canonical metric that only its release
    table places (renames of the sources, newest first). A source family's successor is the canonical
    metric's newest source."""
    stable = {
        source: (spec.name, sources[0])
        for spec, sources in engine.sources.items()
        if spec not in CAPACITY
        for source in sources
    }
    known = _named().get(engine.name, {})
    names = {}
    for name, e in known.items():
        canonical, newest = stable.get(name, (None, None))
        successor = (newest if newest != name else None) or _family(e.get("successor"), known)
        names[name] = NameHistory(
            name, e["first"], e["last"], e["removed_in"], e.get("hidden_since"), successor, canonical
        )
    for h in engine_history(engine):
        if h.family not in names:
            names[h.family] = NameHistory(h.family, h.introduced or "", "", h.removed, None, h.successor, h.canonical)
    return EngineHistory(engine.name, engine.family_prefix, engine.releases(), names, engine.source_families())


def _family(name: str | None, known: dict[str, Any]) -> str | None:
    """A HELP text's "Use X instead" as the family name (vLLM names counters there without `_total`)."""
    if name and name not in known and name + "_total" in known:
        return name + "_total"
    return name


def main(argv: list[str] | None = None) -> int:
    return derived_file_main(
        argv,
        description=__doc__.splitlines()[0],
        source=SOURCE,
        derived=DERIVED,
        derive=derive,
        module="exporter.check.history",  # as the user types it: __name__ is "__main__" under python -m
    )


if __name__ == "__main__":
    raise SystemExit(main())
