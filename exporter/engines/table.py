"""The mapping table per engine release, as `llm-exporter mappings [--engine NAME]` prints it."""

from __future__ import annotations

import re

from exporter.catalogue import engine as m
from exporter.engines import registry
from exporter.engines.mapping import expected_sources
from exporter.engines.releases import Release
from exporter.versions import Version, parse_version

_RELEASE_NAME = re.compile(r"\d+(\.\d+)*(\.?(post|a|b|rc)\d+)*")  # a version, not a commit or a build's name


class UnknownReleaseError(ValueError):
    """A release the engine's table does not hold; the message lists those it does, nearest first."""


def rows(version: str | None = None, *, engine: str) -> list[tuple[str, str, str]]:
    """(release, canonical metric, source family or "-" when the release has none); `version`: only that
    release (a leading "v" and a local "+suffix" ignored), UnknownReleaseError when the table lacks it."""
    spec = registry.get(engine)
    releases = spec.releases()
    chosen = [find_release(version, engine=engine)] if version else list(releases.releases)
    out = []
    for release in chosen:
        expected = expected_sources(release, spec)
        for canonical in spec.sources:
            out.append((release.version, canonical.name, expected.get(canonical, "-")))
    return out


def find_release(version: str, *, engine: str) -> Release:
    """The release of the engine's table named `version`, else UnknownReleaseError listing the known ones."""
    spec = registry.get(engine)
    table = spec.releases()
    wanted = version.strip().removeprefix("v").split("+", 1)[0]
    for known in table.releases:
        if known.version in (version, wanted):
            return known
    asked = parse_version(wanted) if _RELEASE_NAME.fullmatch(wanted) else None
    names = [r.version for r in table.releases]
    if asked is None or not all(_RELEASE_NAME.fullmatch(n) for n in names):
        listed = f"known releases, newest first: {', '.join(reversed(names))}"
        raise UnknownReleaseError(f"{spec.display_name} has no release {version!r}; {listed}")
    mapped = table.at(asked).version  # what a running engine of that version is mapped as
    raise UnknownReleaseError(
        f"{spec.display_name} has no release {version!r} in this exporter's table (an engine answering it is "
        f"mapped as {mapped}); known releases, nearest first: {', '.join(nearest(asked, names))}"
    )


def nearest(asked: Version, names: list[str]) -> list[str]:
    """`names` (release versions, oldest first) nearest `asked` first: the longest common start, then the
    smallest difference at the first number that differs, then the fewest releases between, newer first."""
    parsed = [parse_version(n) or () for n in names]
    below = sum(p < asked for p in parsed)  # where `asked` would stand among them

    def distance(i: int) -> tuple[int, int, int, int]:
        width = max(len(asked), len(parsed[i]))
        a, b = (v + (0,) * (width - len(v)) for v in (asked, parsed[i]))
        common = next((k for k in range(width) if a[k] != b[k]), width)
        gap = abs(a[common] - b[common]) if common < width else 0
        between = below - i if i < below else i - below + 1
        return -common, gap, between, -i

    return [names[i] for i in sorted(range(len(names)), key=distance)]


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
