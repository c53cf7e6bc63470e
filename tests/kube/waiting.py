"""Polling for conditions that a background thread makes true."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def eventually(check: Callable[[], Any], timeout: float = 5.0, interval: float = 0.02) -> Any:
    """Poll `check` until it returns a truthy value; fail with its last value after `timeout`."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = check()
    assert value, f"condition not met within {timeout}s: last value {value!r}"
    return value
