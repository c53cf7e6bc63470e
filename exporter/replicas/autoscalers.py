"""The autoscalers of engine workloads, from their HorizontalPodAutoscalers (pure functions).

KEDA scales through an HPA of its own (`keda-hpa-<ScaledObject>`, owned by the ScaledObject), so one watch
of autoscaling/v2 HPAs sees both: an HPA a ScaledObject controls is reported under the ScaledObject's name,
kind "keda". The HPA's minimum is at least 1 even for a ScaledObject that scales to zero (KEDA itself
scales between 0 and 1).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Autoscaler:
    namespace: str
    workload: str  # the scale target's name: the workload of its pods (startup.workload_of)
    name: str  # the ScaledObject's for KEDA, else the HPA's
    kind: str  # "keda" or "hpa"
    min_replicas: int
    max_replicas: int
    current_replicas: int
    desired_replicas: int
    scaling_limited: bool  # the HPA's ScalingLimited condition: it wanted more (or fewer) than its bounds


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def autoscaler_record(obj: Mapping[str, Any]) -> Autoscaler | None:
    """Reflector transform of an autoscaling/v2 HorizontalPodAutoscaler; None without a scale target."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    target = (spec.get("scaleTargetRef") or {}).get("name")
    if not target:
        return None
    name, kind = str(meta.get("name", "")), "hpa"
    for owner in meta.get("ownerReferences") or []:
        if (
            owner.get("controller")
            and owner.get("kind") == "ScaledObject"
            and owner.get("apiVersion", "").startswith("keda.sh/")
        ):
            name, kind = str(owner.get("name", name)), "keda"
    limited = any(
        c.get("type") == "ScalingLimited" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return Autoscaler(
        str(meta.get("namespace", "")),
        str(target),
        name,
        kind,
        _int(spec.get("minReplicas"), 1),  # the API's default
        _int(spec.get("maxReplicas")),
        _int(status.get("currentReplicas")),
        _int(status.get("desiredReplicas")),
        limited,
    )


def of_engines(autoscalers: Iterable[Autoscaler], workloads: Collection[tuple[str, str]]) -> list[Autoscaler]:
    """The autoscalers whose target is an engine workload ((namespace, workload) of the engine pods)."""
    return sorted(
        (a for a in autoscalers if (a.namespace, a.workload) in workloads), key=lambda a: (a.namespace, a.workload)
    )
