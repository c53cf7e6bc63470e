"""Golden files: a test's output compared byte for byte with a committed file.

    golden.check(path, text)    # text == path's content, or an assertion naming the file (with pytest's diff)

`UPDATE_GOLDEN=1` (the one switch of the whole suite) makes `check` write `text` to `path` first, creating
its folder: a deliberate step whose review is the diff, never a way to make a failing test pass unseen.
"""

from __future__ import annotations

import os
from pathlib import Path

SWITCH = "UPDATE_GOLDEN"


def updating() -> bool:
    """Whether this run rewrites the golden files instead of only comparing with them."""
    return os.environ.get(SWITCH) == "1"


def check(path: Path, text: str) -> None:
    """`text` equals the committed `path`; with UPDATE_GOLDEN=1, `path` is rewritten with `text` first."""
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path.name} is missing: {SWITCH}=1 writes it (review the diff)"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} differs; {SWITCH}=1 rewrites it (review the diff)"
