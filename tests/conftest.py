"""Shared test setup: make `tests.*` helpers importable from every test folder."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# one real control plane (etcd, kube-apiserver, controllers, scheduler, kwok) for every test that asks
from tests.kubecluster import kube_cluster  # noqa: E402, F401


@pytest.fixture(autouse=True)
def root_logger_restored() -> Iterator[None]:
    """The root logger as it was: a command run in-process (`main(["diagnose", ...])`) sets its handler on the
    stderr of its test's capture, which is closed once that test ends."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
