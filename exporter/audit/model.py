"""The normalized model the checks read: a workload and the objects around it, from plain object dicts.

Every function here is pure: it takes the dict a manifest or the API server gives (`kind`, `metadata`,
`spec`, ...) and keeps what the checks read. The same functions are the live reflectors' transforms, so a
manifest and a cluster are judged from the same records. What other roles read too (workloads and their pod
templates, autoscalers, scheduling, accelerators, frontends, selectors) is read by `exporter.k8s`; nodes and
running pods by `exporter.audit.nodes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from exporter.audit.nodes import Node, Pod
from exporter.k8s import frontends
from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.fields import as_dict, meta, strs
from exporter.k8s.frontends import Frontend, Timeout, reaching_timeouts
from exporter.k8s.selectors import Selector, label_selector
from exporter.k8s.workloads import Workload


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
    """The autoscalers that target `w`, or an object that scales it (`Workload.scaled_through`), each once: an HPA
    that KEDA or AIBrix made for a ScaledObject or PodAutoscaler counts as that object (`Autoscaler.reported_as`),
    the object itself where it is in view."""
    found = [
        a
        for a in around.autoscalers
        if a.namespace == w.namespace
        and (
            (a.target_name == w.name and a.target_kind in ("", w.kind))
            or (a.target_kind, a.target_name) in w.scaled_through
        )
    ]
    written = {a.reported_as for a in found if a.managed_by is None}
    return [
        a if a.managed_by is None else replace(a, kind=a.managed_by[0], name=a.managed_by[1])
        for a in found
        if a.managed_by is None or a.managed_by not in written
    ]


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
    return w.declared_replicas
