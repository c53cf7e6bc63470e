"""Why a metric name is missing, from the engines' release histories (pure: no I/O).

"`vllm:time_per_output_token_seconds` was removed in vLLM 0.15.0; its successor is
`vllm:inter_token_latency_seconds` (stable name `llm_inter_token_latency_seconds`); the running vLLM is
0.32.0". String similarity (`similar`) is only the fallback for names no release table knows.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from exporter.catalogue.spec import family_name
from exporter.check.history import EngineHistory, NameHistory, engines
from exporter.check.tables import display_name
from exporter.versions import parse_version


@dataclass(frozen=True)
class Running:
    """The running release of one engine, and how it is known."""

    engine: str
    version: str
    source: str  # "llm_engine_info" or "inferred from its series"


@dataclass(frozen=True)
class Diagnosis:
    name: str
    text: str
    replacement: str | None  # the name a fixed query should use (the successor, else the stable name)


def explain(
    name: str, running: Mapping[str, Running], histories: Sequence[EngineHistory] | None = None
) -> Diagnosis | None:
    """What the release histories say about a missing `name`, or None when no engine knows it."""
    for engine in histories if histories is not None else engines():
        history = engine.lookup(name)
        if history is not None:
            return _explain(engine, history, history.name, running.get(engine.engine))
    return None


def _explain(engine: EngineHistory, h: NameHistory, name: str, running: Running | None) -> Diagnosis:
    label = display_name(engine.engine)
    parts = []
    if h.renamed_in and h.successor:
        parts.append(renamed_text(engine, h))
    elif h.removed_in:
        parts.append(f"{name} was removed in {label} {h.removed_in}")
        if h.hidden_since:
            parts[-1] += f" (hidden behind --show-hidden-metrics-for-version from {h.hidden_since})"
    elif h.hidden_since:
        parts.append(f"{name} is hidden from {label} {h.hidden_since} on (--show-hidden-metrics-for-version)")
    elif h.first:
        parts.append(f"{name} is exposed by every {label} release from {h.first} on: not scraped, or relabelled")
    else:
        parts.append(f"{name} is known to {label}, but no release exposes it by default")
    if h.renamed_in:
        pass  # the rename's own sentence names the successor
    elif h.successor:
        stable = f" (stable name {h.stable})" if h.stable else ""
        parts.append(f"its successor is {h.successor}{stable}")
    elif h.stable:
        parts.append(f"its stable name is {h.stable}")
    elif h.removed_in:
        parts.append("it has no successor")
    if running is not None and running.source == "--against":
        parts.append(f"checked against {label} {running.version}")
        parts.extend(_not_yet(h, running, label))
    elif running is not None:
        parts.append(f"the running {label} is {running.version} ({running.source})")
        parts.extend(_not_yet(h, running, label))
    else:
        parts.append(f"no running {label} found in Prometheus")
    return Diagnosis(name, "; ".join(parts), h.successor or (h.stable if h.removed_in or h.hidden_since else None))


def renamed_text(engine: EngineHistory, h: NameHistory) -> str:
    """A declared rename with its dual-write window: "X was renamed to Y in llm-d router v0.9.0 (both written
    from v0.9.0 on; X still written by v0.10.0, the newest release in the tables)"."""
    label = display_name(engine.engine)
    newest = engine.releases.releases[-1].version
    if not h.first:
        text = (
            f"{h.name} was renamed to {h.successor} before any {label} release (the old name lived only between "
            f"releases); {h.successor} is written from {label} {h.renamed_in} on"
        )
    elif h.removed_in:
        text = (
            f"{h.name} was renamed to {h.successor} in {label} {h.renamed_in} (both written "
            f"{h.renamed_in}..{h.last}; the old name removed in {h.removed_in})"
        )
    else:
        text = (
            f"{h.name} was renamed to {h.successor} in {label} {h.renamed_in} (both written from {h.renamed_in} on; "
            f"the old name still written by {newest}, the newest release in the tables)"
        )
    swaps = ", ".join(f"{new} where {h.name} wrote {old}" for old, new in h.label_renames)
    return text + (f"; {h.successor} writes {swaps}" if swaps else "")


def deprecated(name: str, version: str, histories: Sequence[EngineHistory] | None = None) -> Diagnosis | None:
    """For a name `version` still writes: the declared rename it is in the window of (None when none). The
    replacement is the successor, unless the rename also swapped a label: then the query changes by hand."""
    for engine in histories if histories is not None else engines():
        h = engine.lookup(name)
        key, since = parse_version(version), parse_version(h.renamed_in or "") if h else None
        if h is not None and h.successor and key is not None and since is not None and _pad(key) >= _pad(since):
            text = f"deprecated: {renamed_text(engine, h)}"
            return Diagnosis(h.name, text, None if h.label_renames else h.successor)
    return None


def _pad(key: tuple[int, ...]) -> tuple[int, ...]:
    return key + (0,) * (4 - len(key))


def _not_yet(h: NameHistory, running: Running, label: str) -> list[str]:
    key = parse_version(running.version)
    first = parse_version(h.first)
    if key is not None and first is not None and key < first:
        return [f"{h.name} first appears in {label} {h.first}: upgrade, or use the older name"]
    return []


def infer_running(families: Iterable[str], histories: Sequence[EngineHistory] | None = None) -> dict[str, Running]:
    """Each engine's release as inferred from the engine's own series present in Prometheus."""
    present = {family_name(f) for f in families}
    out = {}
    for engine in histories if histories is not None else engines():
        own = {f for f in present if f.startswith(engine.prefix)}
        if own:
            out[engine.engine] = Running(engine.engine, _candidates(engine, own), "inferred from its series")
    return out


def _candidates(engine: EngineHistory, families: set[str]) -> str:
    """The releases whose default families match `families` best, as "A" or "A to B": releases that differ
    only in names no query sees cannot be told apart, and the diagnosis says so rather than guess."""
    found = families & engine.sources
    scores = []
    for release in engine.releases.releases:
        expected = release.expected & engine.sources
        scores.append((len(expected & found) / (len(expected | found) or 1), release.version))
    best = max(score for score, _ in scores)
    tied = [version for score, version in scores if score == best]
    return tied[0] if len(tied) == 1 else f"{tied[0]} to {tied[-1]}"


def similar(name: str, names: Iterable[str], prefix: str = "") -> str:
    """The fallback: names present that look like `name` (they may be a different quantity). For an engine's
    name (`prefix`), only that engine's names: another engine's family is a different engine's quantity."""
    pool = [n for n in names if not prefix or n.startswith(prefix)]
    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
    return f"similar names present (not necessarily the same quantity): {', '.join(close)}" if close else ""
