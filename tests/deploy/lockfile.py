"""The pinned runtime closure behind `requirements.lock`, computed from installed package metadata.

The lock pins every package the runtime dependencies of pyproject.toml pull in (markers evaluated for
this interpreter on Linux, extras followed), at the versions installed in the dev environment: the
versions the test suite ran against. `UPDATE_GOLDEN=1` rewrites the file from here.
"""

from __future__ import annotations

import importlib.metadata as md
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
HEADER = """\
# Runtime dependencies of llm-inference-exporter, pinned with their whole closure; the image installs
# exactly these (pip install --no-deps -r requirements.lock). Regenerate from the dev environment with
#   UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/deploy/test_dockerfile.py
"""


def runtime_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[Requirement]:
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return [Requirement(r) for r in data["project"]["dependencies"]]


def build_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[Requirement]:
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return [Requirement(r) for r in data["build-system"]["requires"]]


def _applies(req: Requirement, extras: Iterable[str]) -> bool:
    if req.marker is None:
        return True
    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    return any(req.marker.evaluate({**env, "extra": extra}) for extra in ("", *extras))


def closure(
    roots: Iterable[Requirement],
    requires: Callable[[str], list[str] | None] = md.requires,
    version: Callable[[str], str] = md.version,
) -> dict[str, str]:
    """Canonical name → installed version of `roots` and everything they require, transitively."""
    pinned: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(r, frozenset(r.extras)) for r in roots if _applies(r, ())]
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        pinned[name] = version(req.name)
        for text in requires(req.name) or []:
            sub = Requirement(text)
            if _applies(sub, extras):
                todo.append((sub, frozenset(sub.extras)))
    return dict(sorted(pinned.items()))


def render(pins: dict[str, str]) -> str:
    return HEADER + "".join(f"{name}=={version}\n" for name, version in pins.items())


def parse(text: str) -> dict[str, str]:
    """`name==version` lines of a lock (comments and blanks skipped) → canonical name → version."""
    pins: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not version or any(c in version for c in "<>=!~*,; "):
            raise ValueError(f"not an exact pin: {raw!r}")
        pins[canonicalize_name(name)] = version
    return pins
