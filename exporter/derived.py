"""The command of every generated file (`make generate` and `make generate-check` run each).

`--write` rewrites the files from what they are generated from; without it the command exits 1, naming each
file that is out of date (the drift check the tests run too).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def generated_files_main(
    argv: list[str] | None, *, description: str, render: Callable[[], Mapping[Path, str]], module: str
) -> int:
    """`render()` gives each generated file's text; `module` is the command as a user types it (`python -m
    module --write`: `__name__` is "__main__" there)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write", action="store_true", help="rewrite the generated files")
    args = parser.parse_args(argv)
    files = render()
    if args.write:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return 0
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    for path in stale:
        print(f"{path} is out of date: run python -m {module} --write", file=sys.stderr)
    return 1 if stale else 0


def json_text(data: Any) -> str:
    """A derived data file's text: sorted keys, one space of indent, a final newline."""
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def derived_file_main(
    argv: list[str] | None,
    *,
    description: str,
    source: Path | tuple[Path, ...],
    derived: Path,
    derive: Callable[..., Any],
    module: str,
) -> int:
    """A derived data file's command: `derived` is `derive` of the JSON of `source` (one file, or several passed
    to `derive` in order)."""
    sources = source if isinstance(source, tuple) else (source,)

    def render() -> dict[Path, str]:
        return {derived: json_text(derive(*(json.loads(p.read_text()) for p in sources)))}

    return generated_files_main(argv, description=description, render=render, module=module)
