"""The normalized model the checks read: a workload and the objects around it, from plain object dicts.

Every function here is pure: it takes the dict a manifest or the API server gives (`kind`, `metadata`,
`spec`, ...) and keeps what the checks read. The same functions are the live reflectors' transforms, so a
manifest and a cluster are judged from the same records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

# Extended resources that are accelerators (a whole device or a share of one)
_GPU_RESOURCE = re.compile(
    r"^(nvidia\.com/(gpu|mig-.*|gpu\.shared)|amd\.com/gpu|gpu\.intel\.com/.*|habana\.ai/gaudi|google\.com/tpu"
    r"|aws\.amazon\.com/neuron.*)$"
)
# Resources that hand out a time-shared GPU: the NVIDIA device plugin's time-slicing with renameByDefault,
# and HAMi's soft shares
SHARED_GPU_RESOURCE = re.compile(r"^(nvidia\.com/gpu\.shared|nvidia\.com/gpumem|nvidia\.com/gpucores)$")
GPU_TAINT_KEYS = ("nvidia.com/gpu", "amd.com/gpu", "gpu", "google.com/tpu", "habana.ai/gaudi")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strs(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _dict(value).items()}


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def is_gpu_resource(name: str) -> bool:
    return bool(_GPU_RESOURCE.match(name))


def quantity(value: Any) -> float:
    """A resource quantity as a number ("1", 2, "500m"); 0 when unreadable."""
    text = str(value).strip()
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return 0.0


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s|d)")


def duration_seconds(text: Any) -> float | None:
    """A duration as HAProxy, Gateway API and Go write it ("30s", "5m", "1h30m", "500ms", "90"); None if bad."""
    value = str(text).strip()
    if not value:
        return None
    try:
        return float(value)  # HAProxy and nginx: bare numbers are seconds (HAProxy: milliseconds, see routes)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return None
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(float(n) * scale[u] for n, u in parts)


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
    raw = _dict(obj)
    if not raw:
        return None
    kind = next((k for k in ("httpGet", "tcpSocket", "exec", "grpc") if k in raw), "")
    return Probe(
        _int(raw.get("initialDelaySeconds")) or 0,
        _int(raw.get("periodSeconds")) or 10,  # the API's defaults
        _int(raw.get("failureThreshold")) or 3,
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
    resources = _dict(obj.get("resources"))
    gpus: dict[str, float] = {}
    for section in ("limits", "requests"):
        for name, value in _dict(resources.get(section)).items():
            if is_gpu_resource(str(name)):
                gpus[str(name)] = max(gpus.get(str(name), 0.0), quantity(value))
    ports = tuple(
        (str(p.get("name") or ""), _int(p.get("containerPort")) or 0)
        for p in _list(obj.get("ports"))
        if isinstance(p, dict)
    )
    env = tuple(
        (str(e.get("name")), str(e.get("value", "")))
        for e in _list(obj.get("env"))
        if isinstance(e, dict) and e.get("name")
    )
    return Container(
        str(obj.get("name") or ""),
        str(obj.get("image") or ""),
        tuple(str(a) for a in _list(obj.get("command"))),
        tuple(str(a) for a in _list(obj.get("args"))),
        ports,
        env,
        probe(obj.get("readinessProbe")),
        probe(obj.get("livenessProbe")),
        probe(obj.get("startupProbe")),
        bool(_dict(_dict(obj.get("lifecycle")).get("preStop"))),
        tuple(sorted(gpus.items())),
    )


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists" and not self.key:
            return True
        return self.key == taint.key


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class PodTemplate:
    labels: dict[str, str]
    annotations: dict[str, str]
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...]
    grace_period: int | None
    tolerations: tuple[Toleration, ...]
    node_selector: dict[str, str]
    node_affinity_labels: dict[str, tuple[str, ...]]  # required node affinity: key -> values (In), () for Exists

    @property
    def gpus(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for c in self.containers:
            for name, count in c.gpus:
                total[name] = total.get(name, 0.0) + count
        return total


def pod_template(template: Any) -> PodTemplate:
    raw = _dict(template)
    meta, spec = _dict(raw.get("metadata")), _dict(raw.get("spec"))
    affinity: dict[str, tuple[str, ...]] = {}
    required = _dict(
        _dict(_dict(spec.get("affinity")).get("nodeAffinity")).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    for term in _list(required.get("nodeSelectorTerms")):
        for expression in _list(_dict(term).get("matchExpressions")):
            expr = _dict(expression)
            if expr.get("operator") in ("In", "Exists"):
                affinity[str(expr.get("key"))] = tuple(str(v) for v in _list(expr.get("values")))
    return PodTemplate(
        _strs(meta.get("labels")),
        _strs(meta.get("annotations")),
        tuple(container(c) for c in _list(spec.get("containers")) if isinstance(c, dict)),
        tuple(container(c) for c in _list(spec.get("initContainers")) if isinstance(c, dict)),
        _int(spec.get("terminationGracePeriodSeconds")),
        tuple(
            Toleration(str(t.get("key") or ""), str(t.get("operator") or "Equal"), str(t.get("effect") or ""))
            for t in _list(spec.get("tolerations"))
            if isinstance(t, dict)
        ),
        _strs(spec.get("nodeSelector")),
        affinity,
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


def _meta(obj: Mapping[str, Any], default_namespace: str) -> tuple[str, str, dict[str, str], dict[str, str]]:
    meta = _dict(obj.get("metadata"))
    return (
        str(meta.get("namespace") or default_namespace),
        str(meta.get("name") or ""),
        _strs(meta.get("labels")),
        _strs(meta.get("annotations")),
    )


def workload(obj: Mapping[str, Any], default_namespace: str = "default", source: Source = NO_SOURCE) -> Workload | None:
    """A Deployment, StatefulSet or LeaderWorkerSet as a Workload; None for any other kind."""
    kind = str(obj.get("kind") or "")
    if kind not in WORKLOAD_KINDS:
        return None
    namespace, name, labels, annotations = _meta(obj, default_namespace)
    spec = _dict(obj.get("spec"))
    if kind == "LeaderWorkerSet":
        lws = _dict(spec.get("leaderWorkerTemplate"))
        templates = [t for t in (lws.get("leaderTemplate"), lws.get("workerTemplate")) if isinstance(t, dict)]
        # the LeaderWorkerSet controller labels every pod of the set with its name (Services select on it)
        pods = tuple(
            replace(p, labels={**p.labels, LWS_NAME_LABEL: name}) for p in (pod_template(t) for t in templates)
        )
    else:
        pods = (pod_template(spec.get("template")),)
    if not pods:
        pods = (pod_template({}),)
    return Workload(kind, namespace, name, labels, annotations, _int(spec.get("replicas")), pods, source)


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
        m = _dict(metric)
        kind = str(m.get("type") or "")
        body = _dict(m.get(kind[:1].lower() + kind[1:])) if kind else {}
        if kind in ("Resource", "ContainerResource"):
            signals.append(f"resource:{body.get('name', '')}")
        else:
            signals.append(f"{kind.lower()}:{_dict(body.get('metric')).get('name', '')}")
    return tuple(signals)


def _trigger_metric(metadata: dict[str, Any]) -> str:
    return str(metadata.get("query") or metadata.get("metricName") or metadata.get("metric") or "")


def _scale_down_window(behavior: Any) -> int | None:
    return _int(_dict(_dict(behavior).get("scaleDown")).get("stabilizationWindowSeconds"))


def autoscaler(
    obj: Mapping[str, Any], default_namespace: str = "default", source: Source = NO_SOURCE
) -> Autoscaler | None:
    """An HPA (autoscaling/v2 or v1), a KEDA ScaledObject or an AIBrix PodAutoscaler; None for other kinds."""
    kind = str(obj.get("kind") or "")
    api = str(obj.get("apiVersion") or "")
    namespace, name, _, annotations = _meta(obj, default_namespace)
    spec = _dict(obj.get("spec"))
    target = _dict(spec.get("scaleTargetRef"))
    if kind == "HorizontalPodAutoscaler":
        owner = ""
        for ref in _list(_dict(obj.get("metadata")).get("ownerReferences")):
            r = _dict(ref)
            if (
                r.get("controller")
                and r.get("kind") == "ScaledObject"
                and str(r.get("apiVersion", "")).startswith("keda.sh/")
            ):
                owner = str(r.get("name") or "")
        if api == "autoscaling/v1":
            signals: tuple[str, ...] = ("resource:cpu",)  # autoscaling/v1 scales on CPU only
        else:
            signals = _hpa_signals(_list(spec.get("metrics"))) or ("resource:cpu",)  # the API's default: CPU 80 %
        return Autoscaler(
            "hpa", namespace, name, str(target.get("kind") or ""), str(target.get("name") or ""),
            _int(spec.get("minReplicas")) if spec.get("minReplicas") is not None else 1,  # type: ignore[arg-type]
            _int(spec.get("maxReplicas")), signals, _scale_down_window(spec.get("behavior")), None,
            owner_scaledobject=owner, annotations=annotations, source=source,
        )  # fmt: skip
    if kind == "ScaledObject" and api.startswith("keda.sh/"):
        triggers = tuple(_dict(t) for t in _list(spec.get("triggers")))
        signals = tuple(f"{t.get('type', '')}:{_trigger_metric(_dict(t.get('metadata')))}" for t in triggers)
        hpa_config = _dict(_dict(spec.get("advanced")).get("horizontalPodAutoscalerConfig"))
        min_replicas = _int(spec.get("minReplicaCount"))
        return Autoscaler(
            "keda", namespace, name, str(target.get("kind") or "Deployment"), str(target.get("name") or ""),
            0 if min_replicas is None else min_replicas,  # KEDA's default minReplicaCount is 0
            _int(spec.get("maxReplicaCount")), signals, _scale_down_window(hpa_config.get("behavior")),
            _int(spec.get("cooldownPeriod")), triggers, annotations=annotations, source=source,
        )  # fmt: skip
    if kind == "PodAutoscaler" and api.startswith("autoscaling.aibrix.ai/"):
        sources = [_dict(s) for s in _list(spec.get("metricsSources"))]
        signals = tuple(f"{s.get('metricSourceType', '')}:{s.get('targetMetric', '')}" for s in sources)
        if not signals and spec.get("metrics"):
            signals = _hpa_signals(_list(spec.get("metrics")))
        min_replicas = _int(spec.get("minReplicas"))
        return Autoscaler(
            "aibrix", namespace, name, str(target.get("kind") or ""), str(target.get("name") or ""),
            1 if min_replicas is None else min_replicas, _int(spec.get("maxReplicas")), signals, None, None,
            annotations=annotations, source=source,
        )  # fmt: skip
    return None


@dataclass(frozen=True)
class Selector:
    """A label selector: matchLabels and the In / NotIn / Exists / DoesNotExist expressions."""

    match_labels: dict[str, str]
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if not self.match_labels and not self.expressions:
            return False  # an empty selector selects nothing here (a Service without one has manual endpoints)
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for key, op, values in self.expressions:
            if op == "In" and labels.get(key) not in values:
                return False
            if op == "NotIn" and labels.get(key) in values:
                return False
            if op == "Exists" and key not in labels:
                return False
            if op == "DoesNotExist" and key in labels:
                return False
        return True


_SET_TERM = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def parse_label_selector(text: str) -> Selector:
    """A label selector as `kubectl -l` writes it: `a=b,c!=d,e in (f,g),h notin (i),j,!k`; ValueError if bad."""
    labels: dict[str, str] = {}
    expressions: list[tuple[str, str, tuple[str, ...]]] = []
    for raw in re.split(r",(?![^()]*\))", text):
        term = raw.strip()
        if not term:
            continue
        if found := _SET_TERM.match(term):
            values = tuple(v.strip() for v in found.group(3).split(",") if v.strip())
            expressions.append((found.group(1), "In" if found.group(2) == "in" else "NotIn", values))
        elif "!=" in term:
            key, value = (p.strip() for p in term.split("!=", 1))
            expressions.append((key, "NotIn", (value,)))
        elif "=" in term:
            key, value = (p.strip() for p in term.replace("==", "=").split("=", 1))
            labels[key] = value
        elif term.startswith("!"):
            expressions.append((term[1:].strip(), "DoesNotExist", ()))
        elif re.fullmatch(r"[\w./-]+", term):
            expressions.append((term, "Exists", ()))
        else:
            raise ValueError(f"not a label selector term: {term!r}")
    return Selector(labels, tuple(expressions))


def label_selector(obj: Any) -> Selector:
    raw = _dict(obj)
    expressions = tuple(
        (str(e.get("key")), str(e.get("operator")), tuple(str(v) for v in _list(e.get("values"))))
        for e in (_dict(x) for x in _list(raw.get("matchExpressions")))
    )
    return Selector(_strs(raw.get("matchLabels")), expressions)


@dataclass(frozen=True)
class Selecting:
    """An object that picks pods by a label selector."""

    namespace: str
    name: str
    selector: Selector


class Pdb(Selecting):
    """A PodDisruptionBudget."""


class Service(Selecting):
    """A Service (its selector is match labels only)."""


def pdb(obj: Mapping[str, Any], default_namespace: str = "default") -> Pdb | None:
    if obj.get("kind") != "PodDisruptionBudget":
        return None
    namespace, name, _, _ = _meta(obj, default_namespace)
    return Pdb(namespace, name, label_selector(_dict(obj.get("spec")).get("selector")))


def service(obj: Mapping[str, Any], default_namespace: str = "default") -> Service | None:
    if obj.get("kind") != "Service":
        return None
    namespace, name, _, _ = _meta(obj, default_namespace)
    return Service(namespace, name, Selector(_strs(_dict(obj.get("spec")).get("selector"))))


@dataclass(frozen=True)
class Backend:
    kind: str  # "Service" or "InferencePool"
    name: str


@dataclass(frozen=True)
class Frontend:
    """What carries requests from outside to a Service or InferencePool: an Ingress, HTTPRoute or Route."""

    kind: str  # "Ingress", "HTTPRoute", "Route"
    namespace: str
    name: str
    annotations: dict[str, str]
    ingress_class: str
    backends: tuple[Backend, ...]
    timeouts: tuple[float | None, ...] = ()  # HTTPRoute: each rule's request timeout (None: unset)
    source: Source = field(default=Source(), compare=False)


def frontend(obj: Mapping[str, Any], default_namespace: str = "default", source: Source = NO_SOURCE) -> Frontend | None:
    kind = str(obj.get("kind") or "")
    api = str(obj.get("apiVersion") or "")
    namespace, name, _, annotations = _meta(obj, default_namespace)
    spec = _dict(obj.get("spec"))
    if kind == "Ingress":
        backends: list[Backend] = []
        default = _dict(_dict(spec.get("defaultBackend") or spec.get("backend")).get("service"))
        if default.get("name"):
            backends.append(Backend("Service", str(default["name"])))
        for rule in _list(spec.get("rules")):
            for path in _list(_dict(_dict(rule).get("http")).get("paths")):
                backend = _dict(_dict(path).get("backend"))
                svc = _dict(backend.get("service")).get("name") or backend.get("serviceName")
                if svc:
                    backends.append(Backend("Service", str(svc)))
        ingress_class = str(spec.get("ingressClassName") or annotations.get("kubernetes.io/ingress.class") or "")
        return Frontend(
            "Ingress", namespace, name, annotations, ingress_class, tuple(dict.fromkeys(backends)), source=source
        )
    if kind == "HTTPRoute" and api.startswith("gateway.networking.k8s.io/"):
        backends, timeouts = [], []
        for rule in (_dict(r) for r in _list(spec.get("rules"))):
            for ref in (_dict(b) for b in _list(rule.get("backendRefs"))):
                backends.append(Backend(str(ref.get("kind") or "Service"), str(ref.get("name") or "")))
            request = _dict(rule.get("timeouts")).get("request")
            timeouts.append(duration_seconds(request) if request is not None else None)
        return Frontend(
            "HTTPRoute", namespace, name, annotations, "", tuple(dict.fromkeys(backends)), tuple(timeouts), source
        )
    if kind == "Route" and api.startswith("route.openshift.io/"):
        refs = [_dict(spec.get("to")), *(_dict(b) for b in _list(spec.get("alternateBackends")))]
        backends = [Backend("Service", str(r.get("name"))) for r in refs if r.get("name")]
        return Frontend("Route", namespace, name, annotations, "", tuple(dict.fromkeys(backends)), source=source)
    return None


@dataclass(frozen=True)
class InferencePool:
    namespace: str
    name: str
    selector: Selector


def inference_pool(obj: Mapping[str, Any], default_namespace: str = "default") -> InferencePool | None:
    """An InferencePool of inference.networking.k8s.io/v1 (selector.matchLabels) or x-k8s.io/v1alpha2 (a map)."""
    if obj.get("kind") != "InferencePool" or not str(obj.get("apiVersion") or "").startswith("inference.networking."):
        return None
    namespace, name, _, _ = _meta(obj, default_namespace)
    raw = _dict(_dict(obj.get("spec")).get("selector"))
    selector = label_selector(raw) if "matchLabels" in raw or "matchExpressions" in raw else Selector(_strs(raw))
    return InferencePool(namespace, name, selector)


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    gpus: dict[str, float]  # accelerator capacity

    @property
    def has_gpus(self) -> bool:
        return any(v > 0 for v in self.gpus.values()) or self.labels.get("nvidia.com/gpu.present") == "true"

    def schedulable_taints(self) -> tuple[Taint, ...]:
        return tuple(t for t in self.taints if t.effect in ("NoSchedule", "NoExecute"))


def node(obj: Mapping[str, Any]) -> Node | None:
    if obj.get("kind") not in (None, "Node"):
        return None
    meta, spec, status = _dict(obj.get("metadata")), _dict(obj.get("spec")), _dict(obj.get("status"))
    capacity = _dict(status.get("capacity"))
    return Node(
        str(meta.get("name") or ""),
        _strs(meta.get("labels")),
        tuple(
            Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
            for t in (_dict(x) for x in _list(spec.get("taints")))
        ),
        {str(k): quantity(v) for k, v in capacity.items() if is_gpu_resource(str(k))},
    )


@dataclass(frozen=True)
class Pod:
    """A running pod as the GPU-node checks see it: where it runs, whether it asks for a GPU, who owns it."""

    namespace: str
    name: str
    node: str
    labels: dict[str, str]
    requests_gpu: bool
    owner_kind: str


def pod(obj: Mapping[str, Any]) -> Pod | None:
    meta, spec = _dict(obj.get("metadata")), _dict(obj.get("spec"))
    phase = _dict(obj.get("status")).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return None
    owner = next(
        (str(_dict(o).get("kind")) for o in _list(meta.get("ownerReferences")) if _dict(o).get("controller")), ""
    )
    if "kubernetes.io/config.mirror" in _strs(meta.get("annotations")):
        owner = "Node"  # a static pod
    template = pod_template({"metadata": meta, "spec": spec})
    return Pod(
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(spec["nodeName"]),
        template.labels,
        bool(template.gpus),
        owner,
    )


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


def frontends_of(w: Workload, around: Surroundings) -> list[Frontend]:
    """The Ingresses, HTTPRoutes and Routes whose backends are a Service or InferencePool of `w`."""
    targets = {("Service", s.name) for s in services_of(w, around)} | {
        ("InferencePool", p.name) for p in pools_of(w, around)
    }
    return [
        f
        for f in around.frontends
        if f.namespace == w.namespace and any((b.kind, b.name) in targets for b in f.backends)
    ]


def max_replicas(w: Workload, scalers: Sequence[Autoscaler]) -> int | None:
    """The most replicas `w` can have: its autoscalers' maximum, else its fixed count (1 when unset)."""
    if scalers:
        maxima = [a.max_replicas for a in scalers if a.max_replicas is not None]
        return max(maxima) if maxima else None
    return 1 if w.replicas is None else w.replicas
