"""Golden files: a test's output compared byte for byte with a committed file.

    golden.check(path, text)    # text == path's content, or an assertion naming the file (with pytest's diff)

    golden.exposition(text)     # a /metrics text with only what differs between two runs masked (below)

`UPDATE_GOLDEN=1` (the one switch of the whole suite) makes `check` write `text` to `path` first, creating
its folder: a deliberate step whose review is the diff, never a way to make a failing test pass unseen.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
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


# What differs between two runs of the same scenario, and nothing else: how long things took, when they
# happened, the interpreter of the machine, the random suffix of a pod a ReplicaSet named. Every family and
# every series stays in the golden; only these values are replaced.
TIMINGS = (
    "llm_exporter_collector_duration_seconds",  # a collector's last run
    "llm_engine_scrape_duration_seconds",  # one engine target's fetch and map
    "llm_kubernetes_last_sync_timestamp_seconds",  # wall-clock time of the last watch event
    "llm_query_check_last_run_timestamp_seconds",  # wall-clock time of the watchdog's last round
)
MACHINE_LABELS = ("python_version",)  # llm_exporter_build_info
_REPLICASET_POD = re.compile(r'(pod="[a-z0-9-]+-[0-9a-f]{6,10})-[bcdfghjklmnpqrstvwxz2456789]{5}"')


def exposition(text: str, timings: Iterable[str] = TIMINGS, labels: Iterable[str] = MACHINE_LABELS) -> str:
    """`text` with the values of the `timings` families' samples, the values of `labels` and the random
    suffixes of ReplicaSet pod names (`vllm-<template hash>-<5 random>`) replaced by placeholders."""
    names = "|".join(re.escape(name) for name in timings)
    text = re.sub(rf"^((?:{names})(?:\{{[^}}]*\}})?) \S+$", r"\1 <varies>", text, flags=re.M)
    for label in labels:
        text = re.sub(rf'([{{,]{re.escape(label)}=)"[^"]*"', r'\1"<varies>"', text)
    return _REPLICASET_POD.sub(r'\1-<random>"', text)
