from __future__ import annotations

import pytest

from tests.gpu.gpu_helpers import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()
