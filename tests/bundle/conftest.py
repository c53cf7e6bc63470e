"""The two clusters behind Thanos (tests/bundle/thanos.py), started once for every Thanos test module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.bundle.thanos import stores


@pytest.fixture(scope="package")
def thanos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with stores(tmp_path_factory.mktemp("thanos")) as started:
        yield started
