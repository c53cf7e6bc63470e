"""The mapping table per engine release, as `llm-exporter mappings [--engine NAME]` prints it."""

from __future__ import annotations

from exporter.catalogue import engine as m
from exporter.engines import registry
from exporter.engines.mapping import expected_sources
from exporter.versions import parse_version


def rows(version: str | None = None, *, engine: str) -> list[tuple[str, str, str]]:
    """(release, canonical metric, source family or "-" when the release has none)."""
    spec = registry.get(engine)
    releases = spec.releases()
    if version:
        exact = [r for r in releases.releases if r.version == version]
        chosen = exact or [releases.at(parse_version(version) or (0,))]
    else:
        chosen = list(releases.releases)
    out = []
    for release in chosen:
        expected = expected_sources(release, spec)
        for canonical in spec.sources:
            out.append((release.version, canonical.name, expected.get(canonical, "-")))
    return out


def render_table(version: str | None = None, markdown: bool = False, *, engine: str) -> str:
    table = rows(version, engine=engine)
    label = registry.get(engine).display_name
    if markdown:
        lines = [f"| {label} release | canonical metric | {label} source |", "|---|---|---|"]
        lines += [f"| {r} | `{c}` | {'`' + s + '`' if s != '-' else '—'} |" for r, c, s in table]
        return "\n".join(lines) + "\n"
    width = max((len(c) for _, c, _ in table), default=0)
    first = max([10, *(len(r) for r, _, _ in table)])
    return "".join(f"{r:<{first}} {c:<{width}} {s}\n" for r, c, s in table)


def never_mapped(engine: str) -> list[tuple[str, str]]:
    """(canonical metric, why) for each canonical metric the engine never feeds: absent, never a fake 0."""
    spec = registry.get(engine)
    notes = spec.notes or {}
    return [
        (canonical.name, notes.get(canonical, "no source with the same meaning"))
        for canonical in m.MAPPED
        if canonical not in spec.sources
    ]


def behind_flags(engine: str) -> list[str]:
    """Markdown lines: each canonical metric whose source exists only behind an engine flag, or counts only
    with one. It is mapped when the body has it and never reported missing, so the alarm stays quiet on an
    engine started without the flag; a counter that has counted nothing (every sample 0) is absent."""
    spec = registry.get(engine)
    out = []
    for canonical in (*spec.flags, *(c for c in spec.counted_with_flag if c not in spec.flags)):
        sources = ", ".join(f"`{s}`" for s in spec.sources[canonical])
        flag = spec.flags.get(canonical)
        line = f"* `{canonical.name}` from {sources}" + (f": needs `{flag}`" if flag else "")
        if canonical in spec.counted_with_flag:
            line += "; absent while every sample is 0 (a counter that has counted nothing)"
        out.append(line)
    return out
