"""Every engine's source history: when each family behind a canonical metric appeared, when it went, and
what replaced it (pure; from the release tables). `check` uses it to diagnose renames for every engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.engines import registry
from exporter.engines.engine import Engine


@dataclass(frozen=True, slots=True)
class SourceHistory:
    engine: str
    family: str  # the engine's family name
    canonical: str  # the llm_* metric it carries
    introduced: str | None  # first release exposing it (by default); None: no release in the table does
    removed: str | None  # first release after its last appearance; None: the newest release still has it
    successor: str | None  # the family that carries the same metric after it (a rename), if any


def engine_history(engine: Engine) -> tuple[SourceHistory, ...]:
    releases = engine.releases().releases
    out = []
    for spec, sources in engine.sources.items():
        for i, family in enumerate(sources):
            having = [n for n, r in enumerate(releases) if family in r.expected]
            introduced = releases[having[0]].version if having else None
            last = having[-1] if having else None
            removed = releases[last + 1].version if last is not None and last + 1 < len(releases) else None
            successor = sources[i - 1] if i > 0 else None  # sources are listed newest first
            out.append(SourceHistory(engine.name, family, spec.name, introduced, removed, successor))
    return tuple(out)


def histories() -> dict[str, tuple[SourceHistory, ...]]:
    """Engine name → the history of every source family of every canonical metric, for all engines."""
    return {name: engine_history(engine) for name, engine in registry.ENGINES.items()}
