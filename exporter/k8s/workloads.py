"""Workloads and their pod templates (pure): Deployment, StatefulSet and LeaderWorkerSet, their replicas, the
pod template's containers (image, command and args, env, ports, probes, accelerators) and scheduling.

Every unset field reads as the API's documented default (`DEFAULTS`). A LeaderWorkerSet has two templates,
the leader's then the workers'; its controller labels every pod of the set with the set's name
(`LWS_NAME_LABEL`), which is also how a pod names its LeaderWorkerSet (`workload_of_pod`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from exporter.k8s import accelerators, scheduling
from exporter.k8s.fields import NO_SOURCE, Source, as_dict, as_int, as_list, meta, strs
from exporter.k8s.owner_refs import operator_owner
from exporter.k8s.scheduling import Constraints, Toleration

# (kind, field) -> (default, where it is documented)
DEFAULTS: dict[tuple[str, str], tuple[object, str]] = {
    ("Deployment", "replicas"): (1, "k8s.io/api apps/v1 types.go DeploymentSpec.Replicas: \"Defaults to 1.\""),
    ("StatefulSet", "replicas"): (1, "k8s.io/api apps/v1 types.go StatefulSetSpec.Replicas: \"If unspecified, "
                                     "defaults to 1.\""),
    ("LeaderWorkerSet", "replicas"): (1, "sigs.k8s.io/lws api/leaderworkerset/v1 leaderworkerset_types.go "
                                         "LeaderWorkerSetSpec.Replicas: \"Default to 1.\""),
    ("Probe", "periodSeconds"): (10, "k8s.io/api core/v1 types.go Probe.PeriodSeconds: \"Default to 10 seconds.\""),
    ("Probe", "failureThreshold"): (3, "k8s.io/api core/v1 types.go Probe.FailureThreshold: \"Defaults to 3.\""),
    ("Probe", "initialDelaySeconds"): (0, "k8s.io/api core/v1 types.go Probe.InitialDelaySeconds (unset: none)"),
    ("Pod", "terminationGracePeriodSeconds"): (30, "k8s.io/api core/v1 types.go PodSpec."
                                                   "TerminationGracePeriodSeconds: \"Defaults to 30 seconds.\""),
}  # fmt: skip


def default(kind: str, name: str) -> Any:
    return DEFAULTS[(kind, name)][0]


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
        as_int(raw.get("initialDelaySeconds")) or default("Probe", "initialDelaySeconds"),
        as_int(raw.get("periodSeconds")) or default("Probe", "periodSeconds"),
        as_int(raw.get("failureThreshold")) or default("Probe", "failureThreshold"),
        kind,
    )


@dataclass(frozen=True)
class EnvRef:
    """A variable whose value the kubelet reads from another object: an `env` entry's `valueFrom`
    (`configMapKeyRef`, `secretKeyRef`, `fieldRef`, `resourceFieldRef`), or an `envFrom` source (every key of a
    ConfigMap or Secret, `variable` its prefix), or one key of an `envFrom` ConfigMap whose value is withheld
    (`key` set, `variable` that key's variable)."""

    variable: str  # the variable; an envFrom source's prefix ("" for none)
    kind: str  # "ConfigMap", "Secret", "fieldRef", "resourceFieldRef"
    name: str  # the ConfigMap's or Secret's name ("" for a field)
    key: str  # the key of configMapKeyRef/secretKeyRef; "" for envFrom (but one key withheld) and fields
    after: int  # how many literal `env` entries come before it; -1 for envFrom (the kubelet sets those first)
    optional: bool = False
    why: str = ""  # why a ConfigMap's value is unknown, where not that the ConfigMap is not among those read


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
    engine: str = ""  # the engine an operator documents it runs, where neither command nor image names it
    # the variables read from other objects (`env` holds the literal ones), those not resolved from the input
    env_refs: tuple[EnvRef, ...] = ()
    mounts: tuple[tuple[str, str, str], ...] = ()  # volumeMounts: (mountPath, volume, subPath)
    # the files of ConfigMap volumes of the input it mounts: (path in the container, text), once resolved; the
    # text None where the value is withheld (`exporter.k8s.environment.VALUE_LIMIT`)
    files: tuple[tuple[str, str | None], ...] = ()

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
    env: list[tuple[str, str]] = []
    refs = [r for source in as_list(obj.get("envFrom")) if (r := _env_from(source)) is not None]
    for e in as_list(obj.get("env")):
        if not isinstance(e, dict) or not e.get("name"):
            continue
        ref = _value_from(str(e["name"]), as_dict(e.get("valueFrom")), len(env)) if "valueFrom" in e else None
        if ref is not None:
            refs.append(ref)
        else:
            env.append((str(e["name"]), str(e.get("value", ""))))
    return Container(
        str(obj.get("name") or ""),
        str(obj.get("image") or ""),
        tuple(str(a) for a in as_list(obj.get("command"))),
        tuple(str(a) for a in as_list(obj.get("args"))),
        ports,
        tuple(env),
        probe(obj.get("readinessProbe")),
        probe(obj.get("livenessProbe")),
        probe(obj.get("startupProbe")),
        bool(as_dict(as_dict(obj.get("lifecycle")).get("preStop"))),
        tuple(sorted(gpus.items())),
        env_refs=tuple(refs),
        mounts=tuple(
            (str(m.get("mountPath") or ""), str(m.get("name") or ""), str(m.get("subPath") or ""))
            for m in as_list(obj.get("volumeMounts"))
            if isinstance(m, dict)
        ),
    )


def _env_from(source: Any) -> EnvRef | None:
    s = as_dict(source)
    for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
        ref = as_dict(s.get(key))
        if ref.get("name"):
            return EnvRef(str(s.get("prefix") or ""), kind, str(ref["name"]), "", -1, ref.get("optional") is True)
    return None


def _value_from(variable: str, value_from: Mapping[str, Any], after: int) -> EnvRef:
    for key, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
        ref = as_dict(value_from.get(key))
        if ref:
            name, optional = str(ref.get("name") or ""), ref.get("optional") is True
            return EnvRef(variable, kind, name, str(ref.get("key") or ""), after, optional)
    kind = next((k for k in ("fieldRef", "resourceFieldRef") if k in value_from), "valueFrom")
    return EnvRef(variable, kind, "", "", after)


@dataclass(frozen=True)
class PodTemplate:
    labels: dict[str, str]
    annotations: dict[str, str]
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...]
    grace_period: int | None
    constraints: Constraints  # nodeSelector, required node affinity, tolerations
    # ConfigMap volumes: (volume, ConfigMap, ((key, path), ...): its `items`, () for every key at its own name)
    config_volumes: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = ()

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
        tuple(
            (str(v.get("name") or ""), str(as_dict(v.get("configMap")).get("name") or ""),
             tuple((str(i.get("key") or ""), str(i.get("path") or "")) for i in as_list(
                 as_dict(v.get("configMap")).get("items")) if isinstance(i, dict)))
            for v in as_list(spec.get("volumes"))
            if isinstance(v, dict) and as_dict(v.get("configMap")).get("name")
        ),
    )  # fmt: skip


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
    # a workload an operator generates from the resource the user edits (`kind`/`name` name that resource):
    # where each aspect is set there ("replicas": "spec.predictor.minReplicas"); "" where it cannot be set
    fields: dict[str, str] | None = field(default=None, compare=False)
    # what routes requests among its replicas when the operator does (Ray Serve's router), not a Service
    routed_by: str = field(default="", compare=False)
    # the name of the operator resource that controls it (`owner_refs.OPERATORS`): the replica series' workload
    owner: str = field(default="", compare=False)
    owner_kind: str = field(default="", compare=False)  # that resource's kind ("" with no owner)
    # (kind, name) of what else an autoscaler targets to scale it: an object that sets its replicas (RBG's
    # RoleBasedGroupScalingAdapter of a role), matched as an autoscaler's scaleTargetRef
    scaled_through: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def pod(self) -> PodTemplate:
        return self.pods[0]

    @property
    def pod_labels(self) -> dict[str, str]:
        return self.pod.labels

    @property
    def declared_replicas(self) -> int:
        """The replicas its spec asks for, the API's default where unset (an autoscaler may own the count)."""
        return default(self.kind, "replicas") if self.replicas is None else self.replicas


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
    owner = operator_owner(as_dict(obj.get("metadata")), pods[0].labels)
    return Workload(
        kind, namespace, name, labels, annotations, as_int(spec.get("replicas")), pods, source,
        owner=owner[1] if owner else "", owner_kind=owner[0] if owner else "",
    )  # fmt: skip


_POD_TEMPLATE_HASH = re.compile(r"-[a-z0-9]{5,10}$")


def workload_of_pod(metadata: Mapping[str, Any]) -> str:
    """The workload of a pod, from its metadata: a LeaderWorkerSet's name (its label: the worker pods belong to
    a StatefulSet `<set>-<group>` of their leader pod, lws pod_controller.go), a Deployment's (its ReplicaSet
    less the pod-template hash), a StatefulSet's, else the pod's own name."""
    lws = as_dict(metadata.get("labels")).get(LWS_NAME_LABEL)
    if lws:
        return str(lws)
    for owner in as_list(metadata.get("ownerReferences")):
        o = as_dict(owner)
        if o.get("controller"):
            name = str(o.get("name", ""))
            return _POD_TEMPLATE_HASH.sub("", name) if o.get("kind") == "ReplicaSet" else name
    return str(metadata.get("name", ""))
