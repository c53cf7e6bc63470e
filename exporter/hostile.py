"""What a YAML or JSON parser raises on hostile text besides its own errors, and how to say it; a folder test
that survives hostile file names.

PyYAML's constructors raise ValueError (`2001-13-45`, an int of more than 4300 digits), KeyError
(`!!bool x`), IndexError (`!!int ''`) or AttributeError (`!!timestamp x`) for scalars they cannot build,
and both parsers recurse once per level of nesting (`[[[[…`): every reader of user files catches these too.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

BUILD_ERRORS: tuple[type[Exception], ...] = (ValueError, LookupError, AttributeError, OverflowError, RecursionError)


def why(exc: BaseException) -> str:
    """The parse failure in a few words: "nested too deeply", "KeyError: 'x'"."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return f"{type(exc).__name__}: {exc}"


def is_dir(path: Path) -> bool:
    """`path.is_dir()`, False where the name cannot even be looked up (too long): reading it then says why."""
    try:
        return path.is_dir()
    except OSError:
        return False


def seconds(text: str) -> float:
    """An argparse type: a duration in seconds above 0 and finite (nan, inf and 1e999 would wait forever or
    overflow the socket's timeout)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of seconds above 0 is expected")
    return value
