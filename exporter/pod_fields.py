"""What is read from a pod object (pure): timestamps, conditions, the workload.

Shared by the node role's engine discovery and the cluster role's replica start-ups, so neither package
imports the other for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

_POD_TEMPLATE_HASH = re.compile(r"-[a-z0-9]{5,10}$")


def timestamp(text: Any) -> float | None:
    """An RFC 3339 time of the API (`2026-12-03T10:00:00Z`) as a Unix timestamp; None when absent or bad."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def condition_since(status: Mapping[str, Any], kind: str) -> float | None:
    """When the pod condition `kind` last turned True; None while it is not True."""
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return timestamp(condition.get("lastTransitionTime"))
    return None


def workload_of(meta: Mapping[str, Any]) -> str:
    """The controller's name: a Deployment's (its ReplicaSet less the pod-template hash), a StatefulSet's or
    a LeaderWorkerSet's, else the pod's own name."""
    for owner in meta.get("ownerReferences") or []:
        if owner.get("controller"):
            name = str(owner.get("name", ""))
            return _POD_TEMPLATE_HASH.sub("", name) if owner.get("kind") == "ReplicaSet" else name
    return str(meta.get("name", ""))
