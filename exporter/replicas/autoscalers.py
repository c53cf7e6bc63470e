"""The autoscalers of engine workloads, from their HorizontalPodAutoscalers (pure functions).

KEDA scales through an HPA of its own (`keda-hpa-<ScaledObject>`, owned by the ScaledObject), and so does
AIBrix's PodAutoscaler with `scalingStrategy: HPA` (`<PodAutoscaler>-hpa`), so one watch of autoscaling/v2
HPAs sees all three: an HPA a ScaledObject or PodAutoscaler controls is reported under that object's name,
kind "keda" or "aibrix" (`exporter.k8s.autoscalers`, which the audit reads too). The HPA's minimum is at
least 1 even for a ScaledObject that scales to zero (KEDA itself scales between 0 and 1).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.k8s import autoscalers


@dataclass(frozen=True, slots=True)
class Autoscaler:
    namespace: str
    workload: str  # the scale target's name: the workload of its pods (startup.workload_of)
    name: str  # the ScaledObject's (KEDA) or PodAutoscaler's (AIBrix) that made the HPA, else the HPA's
    kind: str  # "hpa", "keda" or "aibrix"
    min_replicas: int
    max_replicas: int
    current_replicas: int
    desired_replicas: int
    scaling_limited: bool  # the HPA's ScalingLimited condition: it wanted more (or fewer) than its bounds
    target_kind: str = field(default="", compare=False)  # the scale target's kind: its operator owner is followed


def autoscaler_record(obj: Mapping[str, Any]) -> Autoscaler | None:
    """Reflector transform of an autoscaling/v2 HorizontalPodAutoscaler; None without a scale target.

    Read by `exporter.k8s.autoscalers.hpa`, as the audit reads it: an HPA a ScaledObject or an AIBrix
    PodAutoscaler made is reported under that object's kind and name."""
    a = autoscalers.hpa(obj)
    if not a.target_name:
        return None
    kind, name = a.reported_as
    return Autoscaler(
        a.namespace,
        a.target_name,
        name,
        kind,
        a.min_replicas,
        a.max_replicas or 0,
        a.current_replicas,
        a.desired_replicas,
        a.scaling_limited,
        a.target_kind,
    )


def of_engines(autoscalers: Iterable[Autoscaler], workloads: Collection[tuple[str, str]]) -> list[Autoscaler]:
    """The autoscalers whose target is an engine workload ((namespace, workload) of the engine pods)."""
    return sorted(
        (a for a in autoscalers if (a.namespace, a.workload) in workloads), key=lambda a: (a.namespace, a.workload)
    )
