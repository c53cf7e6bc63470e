"""Version-aware mapping of one engine body onto canonical families (pure: no I/O).

For each canonical metric, the running release's *expected* source is the first of the metric's sources
that the release exposes. `llm_metric_present` says whether it was found. A canonical metric whose source
is missing is left absent, never reported as 0: a fake 0 is the silent failure this exporter exists to
expose (KEDA reads an empty result as 0 and scales down at peak).

Engine-neutral: the engine (`engine.Engine`) says which families carry each canonical metric and how its
labels map to ours. Engines that create series on first use (`lazy_series`) report a missing source only
once they have served a request (a non-zero `activity` counter): a fresh, idle SGLang or TGI is not broken.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache

from exporter.catalogue.spec import MetricSpec, MetricType
from exporter.engines import parser
from exporter.engines.engine import Derive, Engine
from exporter.engines.releases import Release, Releases
from exporter.exposition import escape_label_value
from exporter.versions import parse_version

IDENTITY = ("namespace", "pod", "engine")
DROP_REASONS = ("series_limit", "label_too_long", "duplicate")


@dataclass(frozen=True, slots=True)
class Limits:
    max_series: int = 20000
    max_label_value_length: int = 1024


@dataclass(slots=True)
class Mapped:
    """The outcome of mapping one body."""

    version: str
    version_source: str  # "endpoint", "inferred"
    # canonical spec → [(suffix, rendered label block, value)]
    samples: dict[MetricSpec, list[tuple[str, str, float]]] = field(default_factory=dict)
    present: dict[MetricSpec, tuple[str, bool]] = field(default_factory=dict)  # → (source, found)
    unmapped: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))


@cache
def wanted_samples(engine: Engine) -> dict[str, tuple[MetricSpec, str]]:
    """Every sample name any release of `engine` may expose for a canonical metric → (spec, suffix)."""
    return {
        source + suffix: (spec, suffix)
        for spec, sources in engine.sources.items()
        for source in sources
        for suffix in spec.suffixes
    }


@cache
def source_families(engine: Engine) -> frozenset[str]:
    return engine.source_families()


@cache
def _parsed_names(engine: Engine) -> frozenset[str]:
    return frozenset(wanted_samples(engine)) | frozenset(engine.activity)


@cache
def _sample_families(engine: Engine) -> dict[str, str]:
    """Every sample name any release of `engine` may expose for a canonical metric → its source family."""
    return {name: name.removesuffix(suffix) for name, (_, suffix) in wanted_samples(engine).items()}


@cache
def _undeclared_totals(engine: Engine) -> dict[str, str]:
    """A source counter's family as declared without `_total` → the source (`x` → `x_total`)."""
    return {s.removesuffix("_total"): s for sources in engine.sources.values() for s in sources if s.endswith("_total")}


@cache
def expected_sources(release: Release, engine: Engine) -> dict[MetricSpec, str]:
    """Canonical metric → the source family `release` should expose for it (metrics it has none for: absent).

    A summary (TGI before 0.5) never stands in for a histogram: the canonical metric is then absent.
    """
    expected = {}
    for spec, sources in engine.sources.items():
        for source in sources:
            if spec.type is MetricType.HISTOGRAM and source in release.summaries:
                continue
            if source in release.expected:
                expected[spec] = source
                break
    return expected


def choose_release(
    releases: Releases, version_text: str | None, families: set[str], engine: Engine
) -> tuple[Release, str, str]:
    """(release whose mapping applies, version label, version_source)."""
    if version_text in engine.unknown_versions:
        version_text = None  # an answer that says nothing (llama.cpp sdist builds: b0-unknown)
    built = engine.version_build(version_text) if engine.version_build and version_text else None
    if built is not None:  # what the engine says is the label; its build number places it in the table
        label, build = built
        placed = releases.by_build(build) or releases.infer(families, source_families(engine))
        return placed, label, "endpoint"
    key = parse_version(version_text) if version_text else None
    if key is not None:
        exact = [r for r in releases.releases if r.version == version_text]  # 0.4.3.post2 is not 0.4.3.post4
        return (exact[0] if exact else releases.at(key)), version_text or "", "endpoint"
    inferred = releases.infer(families, source_families(engine))
    return inferred, inferred.version, "inferred"


def map_body(
    body: str,
    identity: Mapping[str, str],
    version_text: str | None,
    releases: Releases,
    limits: Limits = Limits(),
    *,
    engine: Engine,
) -> Mapped:
    """Map an engine's /metrics body. Raises parser.ParseError on a body that is not the text format."""
    parsed = parser.parse(body, _parsed_names(engine), engine.family_prefix)
    of_sample = _sample_families(engine)
    families = parsed.families | {of_sample[name] for name in parsed.samples if name in of_sample}
    totals = _undeclared_totals(engine)  # some clients declare counters without `_total`
    families.update(totals[family] for family in parsed.families & totals.keys())
    release, version, version_source = choose_release(releases, version_text, families, engine)
    if engine.flavour is not None and (flavour := engine.flavour(body)) is not None:
        release = releases.flavoured(flavour, release)  # its own families: the others are not missing
    # a lazy engine's missing series are only news once it has served a request
    judge_missing = not engine.lazy_series or _active(parsed, engine)
    result = Mapped(version=version, version_source=version_source)
    result.unmapped = len(parsed.families - releases.recognised)
    head = ",".join(f'{key}="{escape_label_value(identity.get(key, ""))}"' for key in IDENTITY)
    renames = tuple(engine.label_renames.items())
    budget = limits.max_series
    for spec, source, counted, derived, quiet in _plan(release, engine, families):
        found = source in families
        if found and counted:
            found = _counted(parsed, source)
        stated = derived(parsed.samples.get(source, [])) if found and derived is not None else []
        if derived is not None and found and not stated:
            continue  # the family is there but does not state the quantity (blocks not sized yet): absent
        if found or (judge_missing and not quiet):
            result.present[spec] = (source, found)
        if not found:
            continue
        out = result.samples.setdefault(spec, [])
        if derived is not None:
            if len(stated) > budget:
                result.dropped["series_limit"] += len(stated)
                continue
            budget -= len(stated)
            out.extend(("", _label_block(head, labels, renames), value) for labels, value in stated)
            continue
        for group in _series_groups(spec, source, parsed, limits, result.dropped, head, renames):
            if len(group) > budget:
                result.dropped["series_limit"] += len(group)
                continue
            budget -= len(group)
            out.extend(group)
    return result


Step = tuple[MetricSpec, str, bool, Derive | None, bool]  # (spec, source, counted with a flag, derive, quiet)


def _plan(release: Release, engine: Engine, families: set[str]) -> tuple[Step, ...]:
    """What to map from a body of `release`: its expected sources, then, for each metric behind a flag the
    release does not expose by default (LoRA, speculative decoding, …), the first of its sources the body has."""
    plan, flagged = _expected_plan(release, engine)
    extra = []
    for spec, sources in flagged:
        found = next((s for s in sources if s in families), None)
        if found is not None:
            extra.append(_step(engine, spec, found))
    return (*plan, *extra) if extra else plan


@cache
def _expected_plan(
    release: Release, engine: Engine
) -> tuple[tuple[Step, ...], tuple[tuple[MetricSpec, tuple[str, ...]], ...]]:
    """The steps of the release's expected sources, and (metric, sources) of each flag-gated metric it lacks."""
    expected = expected_sources(release, engine)
    plan = tuple(_step(engine, spec, source) for spec, source in expected.items())
    return plan, tuple((spec, engine.sources[spec]) for spec in engine.flags if spec not in expected)


def _step(engine: Engine, spec: MetricSpec, source: str) -> Step:
    counted = spec in engine.counted_with_flag
    return (spec, source, counted, engine.derived.get(spec), counted or spec in engine.flags)


def _counted(parsed: parser.ParsedBody, source: str) -> bool:
    """Whether a counter has counted anything (one sample above 0)."""
    return any(value > 0 for _, value in parsed.samples.get(source, ()))


def _active(parsed: parser.ParsedBody, engine: Engine) -> bool:
    """Whether one of the engine's request counters is above zero."""
    return any(value > 0 for name in engine.activity for _, value in parsed.samples.get(name, ()))


Sample = tuple[str, str, float]  # (suffix, our rendered label block, value)


def _series_groups(
    spec: MetricSpec,
    source: str,
    parsed: parser.ParsedBody,
    limits: Limits,
    dropped: dict[str, int],
    head: str,
    renames: tuple[tuple[str, str], ...],
) -> list[list[Sample]]:
    """The samples of one source family, rendered, grouped by their labels without `le`, in body order.

    Drops (and counts) repeated series, keeping the first, and series with an over-long label value.
    """
    groups: dict[tuple[tuple[str, str], ...], list[Sample]] = {}
    longest = limits.max_label_value_length
    for suffix in spec.suffixes:
        samples = parsed.samples.get(source + suffix, [])
        if len({labels for labels, _ in samples}) != len(samples):  # rare: checked in C, handled in Python
            samples = _first_of_each(samples, dropped)
        for labels, value in samples:
            key, block = _series_key(labels, longest, head, renames)
            if key is None:
                dropped["label_too_long"] += 1
                continue
            groups.setdefault(key, []).append((suffix, block, value))
    return list(groups.values())


def _first_of_each(
    samples: list[tuple[tuple[tuple[str, str], ...], float]], dropped: dict[str, int]
) -> list[tuple[tuple[tuple[str, str], ...], float]]:
    """`samples` without repeated label sets, keeping the first; counts the rest as duplicates."""
    first: dict[tuple[tuple[str, str], ...], float] = {}
    for labels, value in samples:
        if labels in first:
            dropped["duplicate"] += 1
        else:
            first[labels] = value
    return list(first.items())


@lru_cache(maxsize=1 << 16)  # the same label sets recur at every scrape (parse_labels hands out the same tuples)
def _series_key(
    labels: tuple[tuple[str, str], ...], longest: int, head: str, renames: tuple[tuple[str, str], ...]
) -> tuple[tuple[tuple[str, str], ...] | None, str]:
    """(the labels that identify a series group: all but `le`, our label block), one cached look-up per
    sample; the key is None when a value is longer than `longest`."""
    if any(len(value) > longest for _, value in labels):
        return None, ""
    return tuple(pair for pair in labels if pair[0] != "le"), _label_block(head, labels, renames)


@lru_cache(maxsize=1 << 16)  # the same series recur at every scrape
def _label_block(head: str, labels: tuple[tuple[str, str], ...], renames: tuple[tuple[str, str], ...]) -> str:
    """Our label block: identity, then `model` and `dp_rank` (from the engine's labels, renamed), then the rest."""
    model = dp_rank = ""
    rest = []
    le = None
    ours = dict(renames)
    for key, value in labels:
        target = ours.get(key)
        if target == "model":
            model = value
        elif target == "dp_rank":
            dp_rank = value
        elif key == "le":
            le = value
        elif key in IDENTITY or key in ("model", "dp_rank"):
            rest.append((f"exported_{key}", value))  # never let a source label overwrite our identity
        else:
            rest.append((key, value))
    parts = [head, f'model="{escape_label_value(model)}"', f'dp_rank="{escape_label_value(dp_rank)}"']
    parts.extend(f'{key}="{escape_label_value(value)}"' for key, value in rest)
    if le is not None:
        parts.append(f'le="{escape_label_value(le)}"')
    return "{" + ",".join(parts) + "}"
