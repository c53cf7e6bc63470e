"""What a running release never had: whether the exporter can produce a canonical metric at all for an engine at
the version `llm_engine_info` names (pure; from the release tables and the engines' sources).

`diagnose` asks it so that a series an engine does not expose in that release (llama.cpp's first-token
histogram, in no release; TGI's, likewise) is a caveat of the report, not telemetry to fix. The answer mirrors
the mapping (`mapping.expected_sources`): what the placed release does not expose by default is never mapped,
except a metric behind a flag, which the engine may well expose (and whose absence is then a fix: the flag).
"""

from __future__ import annotations

from exporter.engines import registry
from exporter.engines.engine import Engine
from exporter.engines.mapping import expected_sources
from exporter.engines.releases import Release
from exporter.versions import parse_version


def release_named(engine: Engine, version: str) -> Release | None:
    """The release of `engine`'s table that the `version` label names, or None where it cannot be placed.

    The label is the engine's own answer (`0.32.0`; llama.cpp's build `b11434`, placed by its number) or, where
    the engine said nothing, the inferred release's own name (llama.cpp's commit `0c1e57098`)."""
    releases = engine.releases()
    exact = [r for r in releases.releases if r.version == version]
    if exact:
        return exact[0]
    if engine.version_build is not None:  # a build number, never a semantic version ("0c1e57098" is no 0)
        built = engine.version_build(version)
        return releases.by_build(built[1]) if built is not None else None
    key = parse_version(version)
    return releases.at(key) if key is not None else None


def never_had(engine_name: str, version: str, metric: str) -> bool:
    """Whether `engine_name` at `version` cannot expose the canonical `metric` (an `llm_*` family name): the
    engine has no source for it in any release, or the release the version names exposes none by default.
    False where that is not known: an engine the exporter does not know (`unknown`), a release the table
    cannot place, or a metric behind one of the engine's flags."""
    engine = registry.ENGINES.get(engine_name)
    if engine is None:
        return False
    specs = [spec for spec in engine.sources if spec.name == metric]
    if not specs:
        return True  # no release of the engine carries it (llama.cpp's first-token latency)
    spec = specs[0]
    if spec in engine.flags:
        return False
    release = release_named(engine, version)
    return release is not None and spec not in expected_sources(release, engine)
