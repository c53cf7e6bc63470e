"""`serve` moves what is alive once its collectors are ready out of the cyclic collector's walks."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from exporter import heap


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the suite runs with a heap as Python leaves it


def test_the_heap_is_frozen_once_the_collectors_are_ready(unfrozen: None) -> None:
    ready = threading.Event()
    stop = threading.Event()
    thread = heap.freeze_when_ready(ready.is_set, stop, poll_seconds=0.01)
    stop.wait(0.1)
    assert gc.get_freeze_count() == 0  # not before the first lists are in
    ready.set()
    thread.join(5)
    assert not thread.is_alive() and gc.get_freeze_count() > 0


def test_a_role_stopped_before_it_was_ready_freezes_nothing(unfrozen: None) -> None:
    stop = threading.Event()
    thread = heap.freeze_when_ready(lambda: False, stop, poll_seconds=0.01)
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and gc.get_freeze_count() == 0
