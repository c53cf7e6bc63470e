"""Defensive access to plain object dicts: a manifest may hold any type where the API would hold another.

A reader takes what a manifest or the API server gives and never raises on a field of the wrong type: it
reads such a field as absent, as the checks would rather say "unset" than stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Source:
    """Where an object came from: a manifest file and line, or the API server ("" file)."""

    file: str = ""
    line: int | None = None


NO_SOURCE = Source()


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def strs(value: Any) -> dict[str, str]:
    """A string map (labels, annotations, selectors) with every key and value as text."""
    return {str(k): str(v) for k, v in as_dict(value).items()}


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def quantity(value: Any) -> float:
    """A resource quantity as a number ("1", 2, "500m"); 0 when unreadable."""
    text = str(value).strip()
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return 0.0


def meta(obj: Mapping[str, Any], default_namespace: str) -> tuple[str, str, dict[str, str], dict[str, str]]:
    """(namespace, name, labels, annotations) of an object; `default_namespace` where it names none."""
    m = as_dict(obj.get("metadata"))
    return (
        str(m.get("namespace") or default_namespace),
        str(m.get("name") or ""),
        strs(m.get("labels")),
        strs(m.get("annotations")),
    )
