"""Which samples each release of each engine exposes, and behind which flag: what `check --against` judges by.

Condensed from the same per-release tables the mapping derives from (`data/vllm_metrics_by_version.json`
and `data/engine_metrics_by_version.json` at the repository root, read from every release's own sources):
per family its type, the sample names it writes (`_total`, `_bucket`, `_sum`, `_count`), the releases that
expose it by default, and the releases that expose it only with a flag or a feature, that condition, and the
source line that declares it. vLLM's hidden metrics count as flag-gated: `--show-hidden-metrics-for-version`
shows them for one minor release. trtllm-serve has no source table (its release table is written by hand in
`exporter/engines/trtllm.py`): its families are known by name only. llm-d's endpoint picker (`llmd_epp`, per
llm-d router release) is judged like an engine, but it runs in its own pod: its series exist at zero engine
replicas. Its families of main between releases (`llm_d_router_epp_*`) are known with no release writing them.
A family that kept its name but changed its meaning (`_meta.meaning_changes` of the source: LMDeploy 0.18.0's
prefill and decode times) is kept per release, for `check --from` to warn on the upgrade that crosses it.
Regenerate with `python -m exporter.check.tables --write`; a test fails on drift.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from exporter.catalogue.spec import HISTOGRAM_SUFFIXES
from exporter.derived import derived_file_main
from exporter.engines import engine_releases, registry
from exporter.engines.engine import Engine
from exporter.versions import parse_version

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (ROOT / "data" / "vllm_metrics_by_version.json", ROOT / "data" / "engine_metrics_by_version.json")
DERIVED = Path(__file__).resolve().parent / "data" / "release_series.json"
PRODUCER_LABELS = {"llmd_epp": "llm-d router"}  # producers that are no engine, as the diagnoses name them


def display_name(engine: str) -> str:
    """How docs and diagnoses write an engine (its `Engine.display_name`) or a producer; else its name."""
    known = registry.ENGINES.get(engine)
    return known.display_name if known is not None else PRODUCER_LABELS.get(engine, engine)


EPP_PREFIXES = (
    "inference_extension_",
    "inference_objective_",
    "inference_pool_",
    "llm_d_epp_",
    "llm_d_router_epp_",
    "llm_d_inference_scheduler_",
)
"""Every subsystem llm-d's endpoint picker has written its families under (GIE's, then llm-d-router's own)."""
ALIASES = {"llm-d-router": "llmd_epp", "llmd-epp": "llmd_epp", "llm-d-epp": "llmd_epp"}
"""`--against` spellings of an engine token besides the table's own (`llmd_epp`)."""
PRODUCERS = {"llmd_epp": "llmd_epp"}  # producers that are no engine (run outside the engine pods) → source key
SUFFIXES = (*HISTOGRAM_SUFFIXES, "_total", "_created", "_info")

# The engines' conditions as their sources spell them → what a user sets. Anything not listed is shown as the
# table words it (it already names the flag or the environment variable).
_CONDITIONS = {
    "self.enable_lora": "LoRA (--enable-lora)",
    "self.enable_hierarchical_cache": "HiCache (--enable-hierarchical-cache)",
    "collect_tokens_histogram": "--collect-tokens-histogram",
    "self.enable_streaming_session": "streaming sessions (enable_streaming_session)",
    "enable_metrics": "--enable-metrics",
    "LoRA enabled (--enable-lora)": "LoRA (--enable-lora)",
    "speculative decoding configured (--speculative-config)": "speculative decoding (--speculative-config)",
    "speculative decoding configured (series emitted only when spec decode stats are logged)": (
        "speculative decoding (--speculative-config)"
    ),
    "registered always; only incremented with --enable-mfu-metrics": "--enable-mfu-metrics",
}
_KV = re.compile(r"^KV connector/offload configured: (.+)$")
_HIDDEN = re.compile(r"--show-hidden-metrics-for-version=(\S+)")


def condition_text(raw: str) -> str:
    """A table's `enabled_when` as the flag or feature a user turns on."""
    if raw in _CONDITIONS:
        return _CONDITIONS[raw]
    if m := _KV.match(raw):
        detail = m.group(1)
        connector = "the NIXL KV connector" if detail.startswith("nixl") else f"KV connector/offloading ({detail})"
        return f"{connector} (--kv-transfer-config)"
    return raw


def _ranges(indices: Sequence[int], versions: Sequence[str]) -> list[str]:
    """Release indices as "A..B" runs of consecutive releases (or "A" alone)."""
    out: list[str] = []
    start = prev = -2
    for i in [*sorted(indices), -5]:
        if i != prev + 1:
            if start >= 0:
                out.append(versions[start] if start == prev else f"{versions[start]}..{versions[prev]}")
            start = i
        prev = i
    return out


def _prev_minor(version: str) -> str:
    key = parse_version(version) or (0, 0)
    return f"{key[0]}.{max(key[1] - 1, 0)}"


def _vllm_when(metric: Mapping[str, Any], version: str) -> str | None:
    """None when vLLM `version` exposes `metric` by default, else the condition that shows it."""
    when = str(metric.get("enabled_when", ""))
    if m := _HIDDEN.search(when):
        return f"--show-hidden-metrics-for-version={m.group(1)}"
    since = metric.get("hidden_since")
    if isinstance(since, str) and (parse_version(since) or ()) <= (parse_version(version) or ()):
        return f"--show-hidden-metrics-for-version={_prev_minor(version)}"
    return None if when.startswith("always") else when


def _engine(versions: Sequence[str], metrics_of: Mapping[str, Sequence[Mapping[str, Any]]], when: Any) -> Any:
    families: dict[str, dict[str, Any]] = {}
    for index, version in enumerate(versions):
        for metric in metrics_of[version]:
            name = metric["name"]
            if "<" in name:  # a name built at run time: no query can spell it
                continue
            entry = families.setdefault(name, {"types": {}, "samples": {}})
            entry["types"].setdefault(metric.get("type", ""), []).append(index)
            condition = when(metric, version)
            for sample in {re.sub(r"\{.*", "", s) for s in metric.get("series") or [name]}:
                exposure = entry["samples"].setdefault(sample, {"default": [], "when": {}})
                if condition is None:
                    exposure["default"].append(index)
                else:
                    gated = exposure["when"].setdefault(condition_text(condition), {"releases": []})
                    gated["releases"].append(index)
                    gated["source"] = str(metric.get("source", ""))
    for entry in families.values():
        entry["types"] = {t: _ranges(r, versions) for t, r in entry["types"].items()}
        for exposure in entry["samples"].values():
            exposure["default"] = _ranges(exposure["default"], versions)
            for gated in exposure["when"].values():
                gated["releases"] = _ranges(gated["releases"], versions)
            if not exposure["when"]:
                del exposure["when"]
    return {"releases": list(versions), "families": dict(sorted(families.items()))}


def derive(vllm_source: Mapping[str, Any], engine_source: Mapping[str, Any]) -> dict[str, Any]:
    versions = sorted(vllm_source["versions"], key=lambda v: parse_version(v) or (0,))
    engines = {"vllm": _engine(versions, vllm_source["versions"], _vllm_when)}
    for ours, key in engine_releases.derived_engines().items():
        table = engine_source[key]
        named = {engine_releases.release_name(ours, k): v for k, v in table.items()}
        order = sorted(enumerate(named), key=lambda p: engine_releases._key(ours, p[0], p[1]))
        engines[ours] = _engine([v for _, v in order], named, lambda m, _v: (m.get("enabled_when") or [None])[0])
        changes = engine_source["_meta"].get("meaning_changes", {}).get(key, {})
        if changes:  # a family kept its name but changed what it measures, from that release on
            engines[ours]["meaning_changes"] = changes
    for ours, key in PRODUCERS.items():
        table = engine_source[key]
        versions = sorted(table, key=lambda v: parse_version(v) or (0,))
        engines[ours] = _engine(versions, table, lambda _m, _v: None)
        for metrics in engine_source.get(f"{key}_unreleased", {}).values():  # known, in no release
            for metric in metrics:
                entry = engines[ours]["families"].setdefault(metric["name"], {"types": {}, "samples": {}})
                for sample in metric.get("series") or [metric["name"]]:
                    entry["samples"].setdefault(sample, {"default": []})
        engines[ours]["families"] = dict(sorted(engines[ours]["families"].items()))
    return {"sources": ["data/vllm_metrics_by_version.json", "data/engine_metrics_by_version.json"], "engines": engines}


@dataclass(frozen=True)
class Exposure:
    default: frozenset[str]  # releases writing the sample without flags
    gated: Mapping[str, tuple[frozenset[str], str]]  # condition → (releases, the source line declaring it)


@dataclass(frozen=True)
class Family:
    name: str
    types: Mapping[str, frozenset[str]]  # counter, gauge, histogram, summary, info → releases; {} for trtllm
    samples: Mapping[str, Exposure]  # sample name → where it is written

    def type_at(self, version: str) -> str:
        return next((t for t, releases in self.types.items() if version in releases), "")


@dataclass(frozen=True, eq=False)  # identity: one object per engine
class EngineTable:
    engine: str
    label: str
    prefixes: tuple[str, ...]
    releases: tuple[str, ...]  # oldest first
    families: Mapping[str, Family]
    in_engine_pods: bool = True  # False for a producer in a pod of its own (its series outlive the engine's)
    # release → (families, what changed, the source line): same name, another meaning from that release on
    meanings: Mapping[str, tuple[tuple[frozenset[str], str, str], ...]] = field(default_factory=dict)

    def owns(self, name: str) -> bool:
        return name.startswith(self.prefixes)

    def release(self, version: str) -> str | None:
        """The table's name for `version` ("0.33" and "v0.33.0" are 0.33.0), or None when no release is it. A
        pre-release (1.4.0rc1, 0.14.0a2) only when named as such: "1.4.0" is not its release candidate."""
        bare = version.strip().removeprefix("v")
        if bare in self.releases:
            return bare
        key = parse_version(version)
        matches = [
            r for r in self.releases if key is not None and not pre_release(r) and _pad(parse_version(r)) == _pad(key)
        ]
        return matches[0] if matches else None

    @property
    def finals(self) -> tuple[str, ...]:
        return tuple(r for r in self.releases if not pre_release(r))

    def meaning_changed(self, family: str, before: str, after: str) -> str | None:
        """What changed in `family`'s meaning in a release after `before` up to `after`, or None."""
        order = self.releases.index
        for version, changes in self.meanings.items():
            if order(before) < order(version) <= order(after):
                for families, change, source in changes:
                    if family in families:
                        return f"{family} changed meaning in {self.label} {version}: {change} (at {source})"
        return None

    def family_of(self, sample: str) -> Family | None:
        """The family writing `sample` on some release (exact sample names first, then the family name)."""
        for family in self.families.values():
            if sample in family.samples:
                return family
        return self.families.get(sample)

    def exposed(self, version: str) -> frozenset[str]:
        """Every sample name `version` writes by default."""
        return _exposed(self, version)


_PRE = re.compile(r"\d(?:a|b|rc|\.?dev)\d*$")


def pre_release(version: str) -> bool:
    """An alpha, beta, release candidate or development build (0.14.0a1, 1.4.0rc1); a post release is none."""
    return bool(_PRE.search(version))


def _pad(key: tuple[int, ...] | None) -> tuple[int, ...]:
    key = key or ()
    return key + (0,) * (4 - len(key))


@cache
def _exposed(table: EngineTable, version: str) -> frozenset[str]:
    return frozenset(s for f in table.families.values() for s, e in f.samples.items() if version in e.default)


def _expand(runs: Sequence[str], versions: Sequence[str]) -> frozenset[str]:
    out: set[str] = set()
    for run in runs:
        first, _, last = run.partition("..")
        a, b = versions.index(first), versions.index(last or first)
        out.update(versions[a : b + 1])
    return frozenset(out)


def _load_engine(engine: str, data: Mapping[str, Any]) -> EngineTable:
    versions = tuple(data["releases"])
    families = {}
    for name, e in data["families"].items():
        samples = {
            sample: Exposure(
                _expand(x["default"], versions),
                {c: (_expand(g["releases"], versions), g["source"]) for c, g in (x.get("when") or {}).items()},
            )
            for sample, x in e["samples"].items()
        }
        types = {t: _expand(r, versions) for t, r in e["types"].items()}
        families[name] = Family(name, types, samples)
    producer = engine in PRODUCERS
    meanings = {
        v: tuple((frozenset(c["families"]), c["change"], c["source"]) for c in changes)
        for v, changes in data.get("meaning_changes", {}).items()
    }
    return EngineTable(engine, display_name(engine), _prefixes(engine), versions, families, not producer, meanings)


def _prefixes(engine: str) -> tuple[str, ...]:
    if engine == "llmd_epp":
        return EPP_PREFIXES
    known = registry.ENGINES.get(engine)
    return known.prefixes if known is not None else (f"{engine}:",)


def _written(engine: Engine) -> EngineTable:
    """The table of an engine whose release table is written, not derived (trtllm-serve's): names only."""
    table = engine.releases()
    versions = tuple(r.version for r in table.releases)
    families = {}
    for name in sorted(table.known):
        default = Exposure(frozenset(r.version for r in table.releases if name in r.expected), {})
        series = [name, *(name + s for s in HISTOGRAM_SUFFIXES)] if name.endswith("_seconds") else [name]
        families[name] = Family(name, {}, dict.fromkeys(series, default))
    return EngineTable(engine.name, engine.display_name, engine.prefixes, versions, families)


@cache
def tables() -> dict[str, EngineTable]:
    """Every engine the release tables know, by its name (`vllm`, `sglang`, …)."""
    data = json.loads(resources.files("exporter.check").joinpath("data/release_series.json").read_text())
    out = {engine: _load_engine(engine, e) for engine, e in data["engines"].items()}
    for engine in registry.ENGINES.values():
        if engine.written_releases is not None:
            out.setdefault(engine.name, _written(engine))
    return out


def owner(name: str) -> EngineTable | None:
    """The engine whose prefix `name` carries (the separator spelled either way), or None."""
    for table in tables().values():
        if table.owns(name) or any(name.startswith(p.rstrip(":") + "_") for p in table.prefixes if p.endswith(":")):
            return table
    return None


def iter_families() -> Iterator[tuple[EngineTable, Family]]:
    for table in tables().values():
        for family in table.families.values():
            yield table, family


def main(argv: list[str] | None = None) -> int:
    return derived_file_main(
        argv,
        description=(__doc__ or "").splitlines()[0],
        source=SOURCES,
        derived=DERIVED,
        derive=derive,
        module="exporter.check.tables",  # as the user types it: __name__ is "__main__" under python -m
    )


if __name__ == "__main__":
    raise SystemExit(main())
