"""The mapping table per vLLM release, as `llm-exporter mappings` prints it."""

from __future__ import annotations

from exporter.engines import vllm
from exporter.engines.mapping import expected_sources
from exporter.engines.releases import load, parse_version


def rows(version: str | None = None) -> list[tuple[str, str, str]]:
    """(release, canonical metric, source family or "-" when the release has none)."""
    releases = load()
    chosen = [releases.at(parse_version(version) or (0,))] if version else list(releases.releases)
    out = []
    for release in chosen:
        expected = expected_sources(release)
        for spec in vllm.SOURCES:
            out.append((release.version, spec.name, expected.get(spec, "-")))
    return out


def render_table(version: str | None = None, markdown: bool = False) -> str:
    table = rows(version)
    if markdown:
        lines = ["| vLLM release | canonical metric | vLLM source |", "|---|---|---|"]
        lines += [f"| {r} | `{c}` | {'`' + s + '`' if s != '-' else '—'} |" for r, c, s in table]
        return "\n".join(lines) + "\n"
    width = max(len(c) for _, c, _ in table)
    return "".join(f"{r:<10} {c:<{width}} {s}\n" for r, c, s in table)
