"""The normalized model the checks read: a workload and the objects around it, from plain object dicts.

Every function here is pure: it takes the dict a manifest or the API server gives (`kind`, `metadata`,
`spec`, ...) and keeps what the checks read. The same functions are the live reflectors' transforms, so a
manifest and a cluster are judged from the same records. What other roles read too (scheduling, accelerators,
frontends, selectors) is read by `exporter.k8s`; nodes and running pods by `exporter.audit.nodes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from exporter.audit.nodes import Node, Pod
from exporter.k8s import accelerators, frontends, scheduling
from exporter.k8s.fields import as_dict, as_int, as_list, meta, strs
from exporter.k8s.frontends import Frontend, Timeout, reaching_timeouts
from exporter.k8s.scheduling import Constraints, Toleration
from exporter.k8s.selectors import Selector, label_selector


@dataclass(frozen=True)
class Probe:
    initial_delay: int
    period: int
    failure_threshold: int
    kind: str  # "httpGet", "tcpSocket", "exec", "grpc"

    @property
    def budget_seconds(self) -> int:
        """How long the probe lets a container take before it acts (restart or unready)."""
        return self.initial_delay + self.period * self.failure_threshold


def probe(obj: Any) -> Probe | None:
    raw = as_dict(obj)
    if not raw:
        return None
    kind = next((k for k in ("httpGet", "tcpSocket", "exec", "grpc") if k in raw), "")
    return Probe(
        as_int(raw.get("initialDelaySeconds")) or 0,
        as_int(raw.get("periodSeconds")) or 10,  # the API's defaults
        as_int(raw.get("failureThreshold")) or 3,
        kind,
    )


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    ports: tuple[tuple[str, int], ...]  # (name, containerPort)
    env: tuple[tuple[str, str], ...]
    readiness: Probe | None
    liveness: Probe | None
    startup: Probe | None
    prestop: bool
    gpus: tuple[tuple[str, float], ...]  # accelerator resources requested or limited

    @property
    def argv(self) -> tuple[str, ...]:
        return (*self.command, *self.args)


def container(obj: Mapping[str, Any]) -> Container:
    gpus = accelerators.requested(as_dict(obj.get("resources")))
    ports = tuple(
        (str(p.get("name") or ""), as_int(p.get("containerPort")) or 0)
        for p in as_list(obj.get("ports"))
        if isinstance(p, dict)
    )
    env = tuple(
        (str(e.get("name")), str(e.get("value", "")))
        for e in as_list(obj.get("env"))
        if isinstance(e, dict) and e.get("name")
    )
    return Container(
        str(obj.get("name") or ""),
        str(obj.get("image") or ""),
        tuple(str(a) for a in as_list(obj.get("command"))),
        tuple(str(a) for a in as_list(obj.get("args"))),
        ports,
        env,
        probe(obj.get("readinessProbe")),
        probe(obj.get("livenessProbe")),
        probe(obj.get("startupProbe")),
        bool(as_dict(as_dict(obj.get("lifecycle")).get("preStop"))),
        tuple(sorted(gpus.items())),
    )


@dataclass(frozen=True)
class PodTemplate:
    labels: dict[str, str]
    annotations: dict[str, str]
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...]
    grace_period: int | None
    constraints: Constraints  # nodeSelector, required node affinity, tolerations

    @property
    def tolerations(self) -> tuple[Toleration, ...]:
        return self.constraints.tolerations

    @property
    def node_selector(self) -> dict[str, str]:
        return dict(self.constraints.node_selector)

    @property
    def gpus(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for c in self.containers:
            for name, count in c.gpus:
                total[name] = total.get(name, 0.0) + count
        return total


def pod_template(template: Any) -> PodTemplate:
    raw = as_dict(template)
    metadata, spec = as_dict(raw.get("metadata")), as_dict(raw.get("spec"))
    return PodTemplate(
        strs(metadata.get("labels")),
        strs(metadata.get("annotations")),
        tuple(container(c) for c in as_list(spec.get("containers")) if isinstance(c, dict)),
        tuple(container(c) for c in as_list(spec.get("initContainers")) if isinstance(c, dict)),
        as_int(spec.get("terminationGracePeriodSeconds")),
        scheduling.constraints(spec),
    )


@dataclass(frozen=True)
class Source:
    """Where an object came from: a manifest file and line, or the API server ("" file)."""

    file: str = ""
    line: int | None = None


NO_SOURCE = Source()


@dataclass(frozen=True)
class Workload:
    kind: str  # Deployment, StatefulSet, LeaderWorkerSet
    namespace: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    replicas: int | None  # None: unset (1 by the API's default; an autoscaler may own it)
    pods: tuple[PodTemplate, ...]  # the pod template; a LeaderWorkerSet's leader, then its workers
    source: Source = field(default=Source(), compare=False)

    @property
    def pod(self) -> PodTemplate:
        return self.pods[0]

    @property
    def pod_labels(self) -> dict[str, str]:
        return self.pod.labels


WORKLOAD_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet")
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


def workload(obj: Mapping[str, Any], default_namespace: str = "default", source: Source = NO_SOURCE) -> Workload | None:
    """A Deployment, StatefulSet or LeaderWorkerSet as a Workload; None for any other kind."""
    kind = str(obj.get("kind") or "")
    if kind not in WORKLOAD_KINDS:
        return None
    namespace, name, labels, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    if kind == "LeaderWorkerSet":
        lws = as_dict(spec.get("leaderWorkerTemplate"))
        templates = [t for t in (lws.get("leaderTemplate"), lws.get("workerTemplate")) if isinstance(t, dict)]
        # the LeaderWorkerSet controller labels every pod of the set with its name (Services select on it)
        pods = tuple(
            replace(p, labels={**p.labels, LWS_NAME_LABEL: name}) for p in (pod_template(t) for t in templates)
        )
    else:
        pods = (pod_template(spec.get("template")),)
    if not pods:
        pods = (pod_template({}),)
    return Workload(kind, namespace, name, labels, annotations, as_int(spec.get("replicas")), pods, source)


@dataclass(frozen=True)
class Autoscaler:
    kind: str  # "hpa", "keda", "aibrix"
    namespace: str
    name: str
    target_kind: str
    target_name: str
    min_replicas: int
    max_replicas: int | None
    signals: tuple[str, ...]  # what it scales on: "resource:cpu", "prometheus:<query>", "external:<name>", ...
    scale_down_window: int | None  # seconds a scale-down waits (HPA stabilization window); None: default
    cooldown: int | None  # KEDA cooldownPeriod (applies to the last replica, to zero); None: default
    keda_triggers: tuple[dict[str, Any], ...] = ()
    owner_scaledobject: str = ""  # an HPA KEDA made for this ScaledObject
    annotations: dict[str, str] = field(default_factory=dict)
    source: Source = field(default=Source(), compare=False)


def _hpa_signals(metrics: Iterable[Any]) -> tuple[str, ...]:
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


def _trigger_metric(metadata: dict[str, Any]) -> str:
    return str(metadata.get("query") or metadata.get("metricName") or metadata.get("metric") or "")


def _scale_down_window(behavior: Any) -> int | None:
    return as_int(as_dict(as_dict(behavior).get("scaleDown")).get("stabilizationWindowSeconds"))


def autoscaler(
    obj: Mapping[str, Any], default_namespace: str = "default", source: Source = NO_SOURCE
) -> Autoscaler | None:
    """An HPA (autoscaling/v2 or v1), a KEDA ScaledObject or an AIBrix PodAutoscaler; None for other kinds."""
    kind = str(obj.get("kind") or "")
    api = str(obj.get("apiVersion") or "")
    namespace, name, _, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    target = as_dict(spec.get("scaleTargetRef"))
    if kind == "HorizontalPodAutoscaler":
        owner = ""
        for ref in as_list(as_dict(obj.get("metadata")).get("ownerReferences")):
            r = as_dict(ref)
            if (
                r.get("controller")
                and r.get("kind") == "ScaledObject"
                and str(r.get("apiVersion", "")).startswith("keda.sh/")
            ):
                owner = str(r.get("name") or "")
        if api == "autoscaling/v1":
            signals: tuple[str, ...] = ("resource:cpu",)  # autoscaling/v1 scales on CPU only
        else:
            signals = _hpa_signals(as_list(spec.get("metrics"))) or ("resource:cpu",)  # the API's default: CPU 80 %
        return Autoscaler(
            "hpa", namespace, name, str(target.get("kind") or ""), str(target.get("name") or ""),
            as_int(spec.get("minReplicas")) if spec.get("minReplicas") is not None else 1,  # type: ignore[arg-type]
            as_int(spec.get("maxReplicas")), signals, _scale_down_window(spec.get("behavior")), None,
            owner_scaledobject=owner, annotations=annotations, source=source,
        )  # fmt: skip
    if kind == "ScaledObject" and api.startswith("keda.sh/"):
        triggers = tuple(as_dict(t) for t in as_list(spec.get("triggers")))
        signals = tuple(f"{t.get('type', '')}:{_trigger_metric(as_dict(t.get('metadata')))}" for t in triggers)
        hpa_config = as_dict(as_dict(spec.get("advanced")).get("horizontalPodAutoscalerConfig"))
        min_replicas = as_int(spec.get("minReplicaCount"))
        return Autoscaler(
            "keda", namespace, name, str(target.get("kind") or "Deployment"), str(target.get("name") or ""),
            0 if min_replicas is None else min_replicas,  # KEDA's default minReplicaCount is 0
            as_int(spec.get("maxReplicaCount")), signals, _scale_down_window(hpa_config.get("behavior")),
            as_int(spec.get("cooldownPeriod")), triggers, annotations=annotations, source=source,
        )  # fmt: skip
    if kind == "PodAutoscaler" and api.startswith("autoscaling.aibrix.ai/"):
        sources = [as_dict(s) for s in as_list(spec.get("metricsSources"))]
        signals = tuple(f"{s.get('metricSourceType', '')}:{s.get('targetMetric', '')}" for s in sources)
        if not signals and spec.get("metrics"):
            signals = _hpa_signals(as_list(spec.get("metrics")))
        min_replicas = as_int(spec.get("minReplicas"))
        return Autoscaler(
            "aibrix", namespace, name, str(target.get("kind") or ""), str(target.get("name") or ""),
            1 if min_replicas is None else min_replicas, as_int(spec.get("maxReplicas")), signals, None, None,
            annotations=annotations, source=source,
        )  # fmt: skip
    return None


@dataclass(frozen=True)
class Selecting:
    """An object that picks pods by a label selector."""

    namespace: str
    name: str
    selector: Selector


class Pdb(Selecting):
    """A PodDisruptionBudget."""


@dataclass(frozen=True)
class Service(Selecting):
    """A Service (its selector is match labels only)."""

    backend_config: str | None = None  # GKE: the BackendConfig annotation, as written


def pdb(obj: Mapping[str, Any], default_namespace: str = "default") -> Pdb | None:
    if obj.get("kind") != "PodDisruptionBudget":
        return None
    namespace, name, _, _ = meta(obj, default_namespace)
    return Pdb(namespace, name, label_selector(as_dict(obj.get("spec")).get("selector")))


def service(obj: Mapping[str, Any], default_namespace: str = "default") -> Service | None:
    if obj.get("kind") != "Service":
        return None
    namespace, name, _, annotations = meta(obj, default_namespace)
    selector = Selector(strs(as_dict(obj.get("spec")).get("selector")))
    return Service(namespace, name, selector, frontends.backend_config_ref(annotations))


@dataclass(frozen=True)
class InferencePool:
    namespace: str
    name: str
    selector: Selector


def inference_pool(obj: Mapping[str, Any], default_namespace: str = "default") -> InferencePool | None:
    """An InferencePool of inference.networking.k8s.io/v1 (selector.matchLabels) or x-k8s.io/v1alpha2 (a map)."""
    if obj.get("kind") != "InferencePool" or not str(obj.get("apiVersion") or "").startswith("inference.networking."):
        return None
    namespace, name, _, _ = meta(obj, default_namespace)
    raw = as_dict(as_dict(obj.get("spec")).get("selector"))
    selector = label_selector(raw) if "matchLabels" in raw or "matchExpressions" in raw else Selector(strs(raw))
    return InferencePool(namespace, name, selector)


@dataclass
class Surroundings:
    """Every object the checks may read besides the workload; `nodes`/`pods` None where they cannot be seen."""

    workloads: list[Workload] = field(default_factory=list)  # all of them, engines or not (routers)
    workload_args: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    autoscalers: list[Autoscaler] = field(default_factory=list)
    pdbs: list[Pdb] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    frontends: list[Frontend] = field(default_factory=list)
    inference_pools: list[InferencePool] = field(default_factory=list)
    backend_configs: dict[tuple[str, str], float | None] = field(default_factory=dict)  # GKE: timeoutSec
    nodes: list[Node] | None = None
    pods: list[Pod] | None = None


def autoscalers_of(w: Workload, around: Surroundings) -> list[Autoscaler]:
    """The autoscalers that target `w`; an HPA that KEDA made for a ScaledObject counts as that ScaledObject."""
    found = [
        a
        for a in around.autoscalers
        if a.namespace == w.namespace and a.target_name == w.name and a.target_kind in ("", w.kind)
    ]
    scaledobjects = {a.name for a in found if a.kind == "keda"}
    return [a for a in found if not (a.kind == "hpa" and a.owner_scaledobject in scaledobjects)]


def services_of(w: Workload, around: Surroundings) -> list[Service]:
    return [s for s in around.services if s.namespace == w.namespace and s.selector.matches(w.pod_labels)]


def pools_of(w: Workload, around: Surroundings) -> list[InferencePool]:
    return [p for p in around.inference_pools if p.namespace == w.namespace and p.selector.matches(w.pod_labels)]


def targets_of(w: Workload, around: Surroundings) -> set[tuple[str, str]]:
    """What a frontend may name to reach `w`: ("Service", name) and ("InferencePool", name) in its namespace."""
    return {("Service", s.name) for s in services_of(w, around)} | {
        ("InferencePool", p.name) for p in pools_of(w, around)
    }


def frontends_of(w: Workload, around: Surroundings) -> list[Frontend]:
    """The Ingresses, HTTPRoutes and Routes with a backend that is a Service or InferencePool of `w`."""
    targets = targets_of(w, around)
    return [
        f
        for f in around.frontends
        if f.namespace == w.namespace and any((b.kind, b.name) in targets for r in f.rules for b in r.backends)
    ]


def frontend_timeouts(w: Workload, f: Frontend, around: Surroundings) -> list[Timeout | None]:
    """The timeout `f` applies to each of its backends that reaches `w` (None: cannot be told)."""
    refs = {s.name: s.backend_config for s in around.services if s.namespace == f.namespace}
    configs = {name: t for (ns, name), t in around.backend_configs.items() if ns == f.namespace}
    return reaching_timeouts(f, targets_of(w, around), refs, configs)


def max_replicas(w: Workload, scalers: Sequence[Autoscaler]) -> int | None:
    """The most replicas `w` can have: its autoscalers' maximum, else its fixed count (1 when unset)."""
    if scalers:
        maxima = [a.max_replicas for a in scalers if a.max_replicas is not None]
        return max(maxima) if maxima else None
    return 1 if w.replicas is None else w.replicas
