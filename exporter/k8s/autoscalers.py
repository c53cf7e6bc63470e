"""The autoscalers of a workload as their controllers read them (pure): HPA, KEDA, AIBrix, VPA.

One record per object, with every unset field read as its controller's documented default (`DEFAULTS`).
Two controllers scale through an HPA of their own, owned by the object the user wrote: KEDA
(`keda-hpa-<ScaledObject>`) and AIBrix with `scalingStrategy: HPA` (`<PodAutoscaler>-hpa`). Such an HPA is
`managed_by` its owner, and every role reports it under the owner's kind and name (`reported_as`), so the
cluster role (which watches the HPAs) and the audit (which reads the objects written) name one autoscaler.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.k8s.fields import NO_SOURCE, Source, as_dict, as_int, as_list, meta

# (controller, field) -> (default, where it is documented). The readers below apply these; the checks cite them.
DEFAULTS: dict[tuple[str, str], tuple[object, str]] = {
    ("hpa", "minReplicas"): (1, "k8s.io/api autoscaling/v2 types.go HorizontalPodAutoscalerSpec.MinReplicas: "
                              "\"It defaults to 1 pod.\""),
    ("hpa", "metrics"): ("resource:cpu", "k8s.io/api autoscaling/v2 types.go HorizontalPodAutoscalerSpec.Metrics: "
                         "\"If not set, the default metric will be set to 80% average CPU utilization.\""),
    ("hpa", "behavior.scaleDown.stabilizationWindowSeconds"): (
        300, "k8s.io/api autoscaling/v2 types.go HorizontalPodAutoscalerBehavior.ScaleDown: \"If not set, the default "
             "value is to allow to scale down to minReplicas pods, with a 300 second stabilization window\""),
    ("hpa", "behavior.scaleUp.stabilizationWindowSeconds"): (
        0, "k8s.io/api autoscaling/v2 types.go HorizontalPodAutoscalerBehavior.ScaleUp: \"No stabilization is used.\""),
    ("keda", "scaleTargetRef.kind"): ("Deployment", "https://keda.sh/docs/latest/reference/scaledobject-spec/"),
    ("keda", "pollingInterval"): (30, "https://keda.sh/docs/latest/reference/scaledobject-spec/ (seconds)"),
    ("keda", "cooldownPeriod"): (300, "https://keda.sh/docs/latest/reference/scaledobject-spec/ (seconds)"),
    ("keda", "minReplicaCount"): (0, "https://keda.sh/docs/latest/reference/scaledobject-spec/"),
    ("keda", "maxReplicaCount"): (100, "https://keda.sh/docs/latest/reference/scaledobject-spec/"),
    ("keda", "idleReplicaCount"): (None, "https://keda.sh/docs/latest/reference/scaledobject-spec/ "
                                         "(\"Default: ignored, must be less than minReplicaCount\")"),
    ("scaledjob", "pollingInterval"): (30, "https://keda.sh/docs/latest/reference/scaledjob-spec/ (seconds)"),
    ("scaledjob", "minReplicaCount"): (0, "https://keda.sh/docs/latest/reference/scaledjob-spec/"),
    ("scaledjob", "maxReplicaCount"): (100, "https://keda.sh/docs/latest/reference/scaledjob-spec/"),
    ("aibrix", "minReplicas"): (1, "github.com/vllm-project/aibrix pkg/controller/podautoscaler/hpa_resources.go "
                                   "makeHPAWithBounds: an unset minimum is left unset on the HPA (the HPA's 1)"),
    ("aibrix", "maxReplicas"): (None, "github.com/vllm-project/aibrix pkg/controller/podautoscaler/hpa_resources.go "
                                      "makeHPAWithBounds: 0 is \"no upper limit\""),
    ("vpa", "updatePolicy.updateMode"): ("Auto", "github.com/kubernetes/autoscaler vertical-pod-autoscaler/pkg/apis/"
                                         "autoscaling.k8s.io/v1/types.go PodUpdatePolicy: \"The default is 'Auto'.\""),
}  # fmt: skip


def default(controller: str, name: str) -> Any:
    return DEFAULTS[(controller, name)][0]


# The HPA each controller makes for the object the user wrote: its owner reference (controller: true)
_OWNERS = {("keda.sh/", "ScaledObject"): "keda", ("autoscaling.aibrix.ai/", "PodAutoscaler"): "aibrix"}


@dataclass(frozen=True)
class Autoscaler:
    kind: str  # "hpa", "keda" (a ScaledObject), "aibrix" (a PodAutoscaler)
    namespace: str
    name: str
    target_kind: str  # "" where the object does not say (an HPA of autoscaling/v1 read from a list)
    target_name: str
    min_replicas: int  # as the controller applies it (KEDA: 0 when unset)
    max_replicas: int | None  # None: no upper limit, or unreadable
    signals: tuple[str, ...]  # what it scales on: "resource:cpu", "prometheus:<query>", "external:<name>", ...
    scale_down_window: int | None  # seconds a scale-down waits (HPA stabilization window); None: the default
    cooldown: int | None  # KEDA cooldownPeriod (to zero, or to idleReplicaCount); None: the default
    keda_triggers: tuple[dict[str, Any], ...] = ()
    managed_by: tuple[str, str] | None = None  # (kind, name) of the ScaledObject/PodAutoscaler that made this HPA
    annotations: dict[str, str] = field(default_factory=dict)
    idle_replicas: int | None = None  # KEDA idleReplicaCount: the count while no trigger is active
    polling_interval: int | None = None  # KEDA pollingInterval; None: the default
    scale_down_disabled: bool = False  # behavior.scaleDown.selectPolicy: Disabled
    current_replicas: int = 0  # an HPA's status
    desired_replicas: int = 0
    scaling_limited: bool = False  # the HPA's ScalingLimited condition
    source: Source = field(default=NO_SOURCE, compare=False)

    @property
    def reported_as(self) -> tuple[str, str]:
        """(kind, name) every role reports: the owner's for an HPA a ScaledObject or PodAutoscaler made."""
        return self.managed_by or (self.kind, self.name)

    @property
    def lowest_replicas(self) -> int:
        """The fewest replicas it may leave: KEDA's idleReplicaCount where set, else the minimum."""
        return min(self.min_replicas, self.idle_replicas) if self.idle_replicas is not None else self.min_replicas

    @property
    def scale_down_seconds(self) -> int:
        """The scale-down stabilization window that applies, the HPA default where unset."""
        return default("hpa", "behavior.scaleDown.stabilizationWindowSeconds") if self.scale_down_window is None \
            else self.scale_down_window  # fmt: skip

    @property
    def cooldown_seconds(self) -> int:
        return default("keda", "cooldownPeriod") if self.cooldown is None else self.cooldown


def hpa_signals(metrics: Iterable[Any]) -> tuple[str, ...]:
    signals = []
    for metric in metrics:
        m = as_dict(metric)
        kind = str(m.get("type") or "")
        body = as_dict(m.get(kind[:1].lower() + kind[1:])) if kind else {}
        if kind in ("Resource", "ContainerResource"):
            signals.append(f"resource:{body.get('name', '')}")
        else:
            signals.append(f"{kind.lower()}:{as_dict(body.get('metric')).get('name', '')}")
    return tuple(signals)


def _scale_down(behavior: Any) -> tuple[int | None, bool]:
    rules = as_dict(as_dict(behavior).get("scaleDown"))
    return as_int(rules.get("stabilizationWindowSeconds")), rules.get("selectPolicy") == "Disabled"


def managed_by(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the ScaledObject or PodAutoscaler that controls this HPA; None for one a user wrote."""
    for ref in as_list(as_dict(obj.get("metadata")).get("ownerReferences")):
        r = as_dict(ref)
        for (api, owner_kind), kind in _OWNERS.items():
            if r.get("controller") and r.get("kind") == owner_kind and str(r.get("apiVersion", "")).startswith(api):
                return kind, str(r.get("name") or "")
    return None


def hpa(obj: Mapping[str, Any], default_namespace: str = "", source: Source = NO_SOURCE) -> Autoscaler:
    """A HorizontalPodAutoscaler of autoscaling/v2 (or v1, by its apiVersion), spec and status."""
    namespace, name, _, annotations = meta(obj, default_namespace)
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    target = as_dict(spec.get("scaleTargetRef"))
    if str(obj.get("apiVersion") or "") == "autoscaling/v1":
        signals: tuple[str, ...] = ("resource:cpu",)  # autoscaling/v1 scales on CPU only
    else:
        signals = hpa_signals(as_list(spec.get("metrics"))) or (default("hpa", "metrics"),)
    window, disabled = _scale_down(spec.get("behavior"))
    low = as_int(spec.get("minReplicas"))
    limited = any(
        as_dict(c).get("type") == "ScalingLimited" and as_dict(c).get("status") == "True"
        for c in as_list(status.get("conditions"))
    )
    return Autoscaler(
        "hpa", namespace, name, str(target.get("kind") or ""), str(target.get("name") or ""),
        default("hpa", "minReplicas") if low is None else low, as_int(spec.get("maxReplicas")), signals, window,
        None, managed_by=managed_by(obj), annotations=annotations, scale_down_disabled=disabled,
        current_replicas=as_int(status.get("currentReplicas")) or 0,
        desired_replicas=as_int(status.get("desiredReplicas")) or 0, scaling_limited=limited, source=source,
    )  # fmt: skip


def _trigger_metric(metadata: dict[str, Any]) -> str:
    return str(metadata.get("query") or metadata.get("metricName") or metadata.get("metric") or "")


def _or(value: int | None, controller: str, name: str) -> Any:
    return default(controller, name) if value is None else value


def scaled_object(obj: Mapping[str, Any], default_namespace: str = "", source: Source = NO_SOURCE) -> Autoscaler:
    """A KEDA ScaledObject; its HPA's behaviour is `advanced.horizontalPodAutoscalerConfig.behavior`."""
    namespace, name, _, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    target = as_dict(spec.get("scaleTargetRef"))
    triggers = tuple(as_dict(t) for t in as_list(spec.get("triggers")))
    signals = tuple(f"{t.get('type', '')}:{_trigger_metric(as_dict(t.get('metadata')))}" for t in triggers)
    window, disabled = _scale_down(
        as_dict(as_dict(spec.get("advanced")).get("horizontalPodAutoscalerConfig")).get("behavior")
    )
    return Autoscaler(
        "keda", namespace, name, str(target.get("kind") or default("keda", "scaleTargetRef.kind")),
        str(target.get("name") or ""), _or(as_int(spec.get("minReplicaCount")), "keda", "minReplicaCount"),
        _or(as_int(spec.get("maxReplicaCount")), "keda", "maxReplicaCount"), signals, window,
        as_int(spec.get("cooldownPeriod")), triggers, annotations=annotations,
        idle_replicas=as_int(spec.get("idleReplicaCount")), polling_interval=as_int(spec.get("pollingInterval")),
        scale_down_disabled=disabled, source=source,
    )  # fmt: skip


def pod_autoscaler(obj: Mapping[str, Any], default_namespace: str = "", source: Source = NO_SOURCE) -> Autoscaler:
    """An AIBrix PodAutoscaler (HPA, KPA or APA strategy)."""
    namespace, name, _, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    target = as_dict(spec.get("scaleTargetRef"))
    sources = [as_dict(s) for s in as_list(spec.get("metricsSources"))]
    signals = tuple(f"{s.get('metricSourceType', '')}:{s.get('targetMetric', '')}" for s in sources)
    if not signals and spec.get("metrics"):
        signals = hpa_signals(as_list(spec.get("metrics")))
    high = as_int(spec.get("maxReplicas"))
    return Autoscaler(
        "aibrix", namespace, name, str(target.get("kind") or ""), str(target.get("name") or ""),
        _or(as_int(spec.get("minReplicas")), "aibrix", "minReplicas"), high or default("aibrix", "maxReplicas"),
        signals, None, None, annotations=annotations, source=source,
    )  # fmt: skip


def autoscaler(
    obj: Mapping[str, Any], default_namespace: str = "default", source: Source = NO_SOURCE
) -> Autoscaler | None:
    """An HPA (autoscaling/v2 or v1), a KEDA ScaledObject or an AIBrix PodAutoscaler; None for other kinds."""
    kind, api = str(obj.get("kind") or ""), str(obj.get("apiVersion") or "")
    if kind == "HorizontalPodAutoscaler":
        return hpa(obj, default_namespace, source)
    if kind == "ScaledObject" and api.startswith("keda.sh/"):
        return scaled_object(obj, default_namespace, source)
    if kind == "PodAutoscaler" and api.startswith("autoscaling.aibrix.ai/"):
        return pod_autoscaler(obj, default_namespace, source)
    return None


@dataclass(frozen=True)
class ScaledJob:
    """A KEDA ScaledJob: it starts Jobs from a template (batch work), it scales no workload."""

    namespace: str
    name: str
    min_replicas: int
    max_replicas: int
    polling_interval: int
    signals: tuple[str, ...]


def scaled_job(obj: Mapping[str, Any], default_namespace: str = "default") -> ScaledJob | None:
    if obj.get("kind") != "ScaledJob" or not str(obj.get("apiVersion") or "").startswith("keda.sh/"):
        return None
    namespace, name, _, _ = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    triggers = [as_dict(t) for t in as_list(spec.get("triggers"))]
    return ScaledJob(
        namespace, name, _or(as_int(spec.get("minReplicaCount")), "scaledjob", "minReplicaCount"),
        _or(as_int(spec.get("maxReplicaCount")), "scaledjob", "maxReplicaCount"),
        _or(as_int(spec.get("pollingInterval")), "scaledjob", "pollingInterval"),
        tuple(f"{t.get('type', '')}:{_trigger_metric(as_dict(t.get('metadata')))}" for t in triggers),
    )  # fmt: skip


@dataclass(frozen=True)
class VerticalAutoscaler:
    """A VerticalPodAutoscaler: `evicts` when its mode resizes running pods by evicting them (a cold start)."""

    namespace: str
    name: str
    target_kind: str
    target_name: str
    update_mode: str

    @property
    def evicts(self) -> bool:
        return self.update_mode in ("Auto", "Recreate")


def vpa(obj: Mapping[str, Any], default_namespace: str = "default") -> VerticalAutoscaler | None:
    if obj.get("kind") != "VerticalPodAutoscaler" or not str(obj.get("apiVersion") or "").startswith(
        "autoscaling.k8s.io/"
    ):
        return None
    namespace, name, _, _ = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    target = as_dict(spec.get("targetRef"))
    mode = as_dict(spec.get("updatePolicy")).get("updateMode")
    return VerticalAutoscaler(
        namespace, name, str(target.get("kind") or ""), str(target.get("name") or ""),
        str(mode or default("vpa", "updatePolicy.updateMode")),
    )  # fmt: skip
