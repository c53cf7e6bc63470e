from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.fakes

from tests.fakes.kube_api import FakeKubeAPI  # noqa: E402


@pytest.fixture
def fake_api() -> Iterator[FakeKubeAPI]:
    api = FakeKubeAPI(bookmark_interval=0.2).start()
    yield api
    api.stop()


@pytest.fixture
def kubeconfig(fake_api: FakeKubeAPI, tmp_path: Path) -> str:
    return fake_api.write_kubeconfig(tmp_path / "kubeconfig")
