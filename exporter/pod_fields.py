"""What is read from a pod object (pure): timestamps, conditions, the workload (`exporter.k8s.workloads`).

Shared by the node role's engine discovery and the cluster role's replica start-ups, so neither package
imports the other for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from exporter.k8s.owners import generated_of_pod


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


def workload_of(metadata: Mapping[str, Any]) -> str:
    """The name of the workload a pod belongs to, read where workloads are (`exporter.k8s.owners.generated_of_pod`,
    one reading for every role): the generated workload, or the operator resource a pod's label names."""
    return generated_of_pod(metadata)[1]
