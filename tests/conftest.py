"""Shared test setup: make `tests.*` helpers importable from every test folder."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# one real control plane (etcd, kube-apiserver, controllers, scheduler, kwok) for every test that asks
from tests.kubecluster import kube_cluster  # noqa: E402, F401
