from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # fake_nvml, gpu_helpers

from gpu_helpers import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()
