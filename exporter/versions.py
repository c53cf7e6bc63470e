"""Release numbers as tuples: the one parser for engines', producers' and the exporter's own versions."""

from __future__ import annotations

Version = tuple[int, ...]
_DIGITS = "0123456789"  # ASCII only: "²".isdigit() is true and int("²") fails; a version answer is input


def parse_version(text: str) -> Version | None:
    """The numeric release of a version string, None when it starts with no number: "0.10.1.1" → (0, 10, 1, 1);
    "v0.33.0" → (0, 33, 0); "0.11.2.post2+cpu" → (0, 11, 2); a suffix ends the numbers: "0.3.0rc1" → (0, 3, 0)."""
    parts: list[int] = []
    for piece in text.strip().lstrip("v").replace("+", ".").replace("-", ".").split("."):
        digits = len(piece) - len(piece.lstrip(_DIGITS))
        rest = piece[digits:]
        # a number of few ASCII digits: an engine's /version is input like any other ("1²" is no number)
        if not 0 < digits <= 9 or rest[:1].isdigit():
            break
        parts.append(int(piece[:digits]))
        if rest:
            break
    return tuple(parts) if parts else None
