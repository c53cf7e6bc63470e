"""The one pipeline of the engines' release tables: each engine's table derived from its released sources.

vLLM's from `data/vllm_metrics_by_version.json` (repository root, read from the sdists of every release 0.5.0
on) into `exporter/engines/data/vllm_releases.json`; SGLang's, TGI's, llama.cpp's and LMDeploy's from
`data/engine_metrics_by_version.json` (read statically from each engine's released sources: its
`_meta.generated_from` says how: SGLang wheels, TGI and LMDeploy git tags, llama.cpp as vendored in
llama-cpp-python sdists) into `exporter/engines/data/engine_releases.json`. Every table has one shape (see
`releases.py`, which loads them); regenerate with `python -m exporter.engines.engine_releases --write` (a test
fails on drift). Each source says in its own words what a release exposes by default: vLLM's `enabled_when`
("always", not behind `--show-hidden-metrics-for-version`), the others' (an empty `enabled_when`: SGLang's
LoRA, hierarchical cache, … are known but not expected). vLLM's Rust frontend (0.33.0 on) registers every
family at start-up: its flavour expects each one. llama.cpp releases carry their build number where
`data/llamacpp_builds.json` knows it, so that a release build's `/props` (`b11434-9f4a0c2`) is placed by
number. trtllm-serve is not in the sources (its release boundaries are only inferred): see trtllm.py.
Producers that are no inference engine are kept beside them (`producers`: llm-d's endpoint picker per router
release, with the renames its sources declare), for `check`'s history; `producer(name)` reads one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from exporter.derived import generated_files_main, json_text
from exporter.engines.releases import Release, Releases
from exporter.versions import parse_version

SOURCE = Path(__file__).resolve().parents[2] / "data" / "engine_metrics_by_version.json"
DERIVED = Path(__file__).resolve().parent / "data" / "engine_releases.json"
VLLM_SOURCE = SOURCE.parent / "vllm_metrics_by_version.json"
VLLM_DERIVED = DERIVED.parent / "vllm_releases.json"
BUILDS = SOURCE.parent / "llamacpp_builds.json"
_POST = re.compile(r"\.post(\d+)$")


def _naming(engine: str) -> Callable[[str], tuple[str, str | None]] | None:
    """How `engine` names the releases of its source entries (`Engine.named_in_source`), or None."""
    from exporter.engines import registry  # the engines' modules load their tables from here

    known = registry.ENGINES.get(engine)  # a producer (llmd_epp) names its releases by version
    return known.named_in_source if known is not None else None


def _named(engine: str, key: str) -> tuple[str, str | None] | None:
    """(release name, commit) of a source entry of an engine that names its releases otherwise, else None."""
    hook = _naming(engine)
    return hook(key) if hook is not None else None


def release_name(engine: str, key: str) -> str:
    """The release's name as we label it: the source's key, or what the engine's module reads in it."""
    named = _named(engine, key)
    return named[0] if named is not None else key


def _builds() -> dict[str, int]:
    """llama.cpp commit (full) → build number, from data/llamacpp_builds.json."""
    return {commit: entry["build"] for commit, entry in json.loads(BUILDS.read_text())["builds"].items()}


def _build_of(commit: str | None, builds: dict[str, int]) -> int | None:
    """The build number of the one commit `commit` (9 hex digits or more) abbreviates, else None."""
    if commit is None or len(commit) < 9:
        return None
    found = [b for full, b in builds.items() if full.startswith(commit)]
    return found[0] if len(found) == 1 else None


PRODUCERS = {"llmd_epp": "llmd_epp"}  # producers that are no inference engine (llm-d's endpoint picker): ours → key


def _label_renames(old: list[str], new: list[str]) -> dict[str, str]:
    """The one-for-one label swaps between a family and its successor (pod_name → endpoint_name)."""
    if len(old) != len(new):
        return {}
    swaps = {a: b for a, b in zip(old, new, strict=True) if a != b}
    return swaps if len(swaps) == 1 else {}


def derive_producer(releases: dict[str, list[dict[str, Any]]], unreleased: dict[str, Any]) -> dict[str, Any]:
    """A producer's table: the families of each release, every name known (unreleased builds' included), the
    renames its sources declare ("[Deprecated: Use X]") or a subsystem rename implies, and their label swaps."""
    labels: dict[str, list[str]] = {}
    table = []
    for version, metrics in releases.items():
        table.append({"version": version, "expected": sorted({m["name"] for m in metrics})})
        labels.update({m["name"]: m["labels"] for m in metrics})
    released = set(labels)
    for metrics in unreleased.values():
        for m in metrics:
            labels.setdefault(m["name"], m["labels"])
    renamed = {
        m["name"]: m["deprecated_for"]
        for metrics in releases.values()
        for m in metrics
        if m.get("deprecated_for") in released
    }
    # llm_d_router_epp_* lived between releases only (see _meta): each is the llm_d_epp_* of the same suffix
    for name in set(labels) - released:
        if name.startswith("llm_d_router_epp_") and (new := "llm_d_epp_" + name[17:]) in released:
            renamed[name] = new
    swaps = {old: sw for old, new in renamed.items() if (sw := _label_renames(labels[old], labels[new]))}
    return {
        "releases": table,
        "known": sorted(labels),
        "renamed": dict(sorted(renamed.items())),
        "label_renames": dict(sorted(swaps.items())),
    }


def _vllm_default(metric: dict[str, Any], key: tuple[int, ...] | None) -> bool:
    """Whether a vLLM release exposes `metric` without flags: "always" (not the HTTP server's own families,
    `prometheus_fastapi_instrumentator`), not hidden by then, and one of vLLM's own (`vllm:`)."""
    when = metric["enabled_when"]
    return (
        when.startswith("always")
        and not when.startswith("always (prometheus_fastapi")
        and not _hidden(metric, key)
        and metric["name"].startswith("vllm:")
    )


def _hidden(metric: dict[str, Any], key: tuple[int, ...] | None) -> bool:
    since = metric.get("hidden_since")
    if not isinstance(since, str) or key is None:
        return False
    return (parse_version(since) or ()) <= key


def _oldest_first(versions: Iterable[str]) -> list[str]:
    return sorted(versions, key=lambda v: (parse_version(v) or (0,), v))


def derive_vllm(source: dict[str, Any]) -> dict[str, Any]:
    """vLLM's table: per release the families its Python frontend exposes by default, every family any
    release knows (the non-default engine's and the index's included), and the Rust frontend's flavour."""
    versions = source["versions"]
    releases = [
        {
            "version": version,
            "key": list(parse_version(version) or (0,)),
            "expected": sorted(m["name"] for m in versions[version] if _vllm_default(m, parse_version(version))),
        }
        for version in _oldest_first(versions)
    ]
    known = sorted(
        {
            m["name"]
            for table in ("versions", "versions_non_default_engine")
            for ms in source[table].values()
            for m in ms
        }
        | set(source["index"])
    )
    rust_source = source.get("versions_rust_frontend", {})
    rust = [
        {
            "version": version,
            "key": list(parse_version(version) or (0,)),
            "expected": sorted({m["name"] for m in rust_source[version] if m["name"].startswith("vllm:")}),
        }
        for version in _oldest_first(rust_source)
    ]
    table = {"releases": releases, "known": known, "flavours": {"rust_frontend": rust}}
    return {"source": "data/vllm_metrics_by_version.json", "engines": {"vllm": table}}


def derived_engines() -> dict[str, str]:
    """Each engine whose table is derived from `SOURCE` → its entry there (`Engine.release_source`)."""
    from exporter.engines import registry  # the engines' modules load their tables from here

    return {e.name: e.release_source for e in registry.ENGINES.values() if e.release_source is not None}


def derive(source: dict[str, Any], builds: dict[str, int] | None = None) -> dict[str, Any]:
    builds = _builds() if builds is None else builds
    engines: dict[str, Any] = {}
    for ours, key in derived_engines().items():
        releases = []
        known: set[str] = set()
        for index, (version, metrics) in enumerate(source[key].items()):
            known.update(m["name"] for m in metrics)
            default = [m for m in metrics if not m.get("enabled_when")]
            release = {
                "version": release_name(ours, version),
                "source_key": version,
                "expected": sorted({m["name"] for m in default}),
                "summaries": sorted({m["name"] for m in default if m["type"] == "summary"}),
                "key": list(_key(ours, index, release_name(ours, version))),
            }
            named = _named(ours, version)
            if named is not None and (build := _build_of(named[1], builds)) is not None:
                release["build"] = build
            releases.append(release)
        engines[ours] = {"releases": sorted(releases, key=lambda r: r["key"]), "known": sorted(known)}
    producers = {
        ours: derive_producer(source[key], source.get(f"{key}_unreleased", {})) for ours, key in PRODUCERS.items()
    }
    return {
        "source": "data/engine_metrics_by_version.json",
        "builds": "data/llamacpp_builds.json",
        "producers": producers,
        "generated_from": source["_meta"]["generated_from"],
        "engines": engines,
    }


def _key(engine: str, index: int, version: str) -> tuple[int, ...]:
    # releases named by commit (llama.cpp's): their order in the source is their order
    if _naming(engine) is not None:
        return (index,)
    key = parse_version(version) or (0,)
    post = _POST.search(version)  # SGLang's 0.4.3.post3 changed names: a post release is a release
    return (*key, int(post.group(1))) if post else key


@dataclass(frozen=True)
class Producer:
    """A producer that is no inference engine (llm-d's endpoint picker): its releases, and its renames."""

    releases: Releases
    renamed: Mapping[str, str]  # family → its successor
    label_renames: Mapping[str, Mapping[str, str]]  # family → {label: the successor's label}


@cache
def producer(name: str) -> Producer:
    data = json.loads(resources.files("exporter.engines").joinpath("data/engine_releases.json").read_text())
    table = data["producers"][name]
    releases = tuple(
        Release(r["version"], parse_version(r["version"]) or (0,), frozenset(r["expected"])) for r in table["releases"]
    )
    return Producer(Releases(releases, frozenset(table["known"])), table["renamed"], table["label_renames"])


def rendered() -> dict[Path, str]:
    """Every derived release table's text."""
    vllm = json.loads(VLLM_SOURCE.read_text())
    return {VLLM_DERIVED: json_text(derive_vllm(vllm)), DERIVED: json_text(derive(json.loads(SOURCE.read_text())))}


def main(argv: list[str] | None = None) -> int:
    return generated_files_main(
        argv,
        description=(__doc__ or "").splitlines()[0],
        render=rendered,
        module="exporter.engines.engine_releases",  # as the user types it: __name__ is "__main__" under python -m
    )


if __name__ == "__main__":
    raise SystemExit(main())
