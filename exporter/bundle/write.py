"""Writing a set of files into a folder all or nothing: `render --out DIR`.

Each file is written to a temporary file in DIR first, and only when every one is written are they renamed
onto their names (a rename within a folder replaces the old file in one step). A failure on the way removes
the temporary files and the folders it created, so DIR holds the old set or the new one, and a reader
(Prometheus reloading the rule file) never sees half a file. The renames are checked beforehand not to
land on a folder; one failing after others went through (the disk removed under us) would leave a mix.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path


class OutError(Exception):
    """DIR cannot take the files; the message says why, for `--out DIR: <message>`."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _make_folders(folder: Path, created: list[Path]) -> None:
    """Create `folder` and the missing folders above it, outermost first, each appended to `created`."""
    missing = []
    for path in (folder, *folder.parents):
        if path.is_dir():
            break
        if path.exists():
            raise OutError(f"{path} is a file, not a folder" if path != folder else "is a file, not a folder")
        missing.append(path)
    for path in reversed(missing):
        try:
            path.mkdir()
        except OSError as e:
            raise OutError(f"cannot create the folder {path}: {e.strerror or e}") from None
        created.append(path)


def _write(folder: Path, files: Mapping[str, str], created: list[Path], temps: list[tuple[str, Path]]) -> None:
    _make_folders(folder, created)
    for name in files:
        if (folder / name).is_dir():
            raise OutError(f"{folder / name} is a folder; the file {name} goes there")
    mode = 0o666 & ~_umask()  # what a plain open() gives; mkstemp's own 0600 would hide the rules from Prometheus
    for name, text in files.items():
        fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        temps.append((temp, folder / name))
        os.fchmod(fd, mode)
        with open(fd, "w", encoding="utf-8") as f:
            f.write(text)
    for temp, path in temps:
        os.replace(temp, path)


def write_files(folder: Path, files: Mapping[str, str]) -> list[Path]:
    """Write `files` (file name → text) into `folder`, all or none; the paths written, in the order given."""
    created: list[Path] = []
    temps: list[tuple[str, Path]] = []
    try:
        _write(folder, files, created, temps)
    except (OSError, OutError) as e:
        for temp, _ in temps:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        for path in reversed(created):
            with contextlib.suppress(OSError):
                path.rmdir()
        if isinstance(e, OutError):
            raise
        raise OutError(f"cannot write a file in {folder}: {e.strerror or e}") from None
    return [path for _, path in temps]
