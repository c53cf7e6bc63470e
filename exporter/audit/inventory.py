"""Plain object dicts (a manifest's documents, or lists from the API server) sorted into the checks' model."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.audit import model, nodes
from exporter.audit.model import Surroundings
from exporter.k8s import autoscalers, environment, frontends, operators, owner_refs, workloads
from exporter.k8s.fields import NO_SOURCE, Source, as_dict, meta
from exporter.k8s.selectors import Selector
from exporter.k8s.workloads import Workload

# Kinds read and not audited themselves; any other kind is skipped with a note
_CONTEXT_KINDS = {
    "HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler", "PodDisruptionBudget", "Service", "Ingress",
    "HTTPRoute", "Route", "InferencePool", "Node", "Pod", "BackendConfig",
}  # fmt: skip
# Kinds a deployment commonly carries that no check reads: not worth a note each
_QUIET_KINDS = {
    "ConfigMap", "Secret", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
    "Namespace", "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "NetworkPolicy",
    "CustomResourceDefinition", "ServiceMonitor", "PodMonitor", "PrometheusRule", "Gateway", "GatewayClass",
    "DaemonSet", "Job", "CronJob", "InferenceObjective", "InferenceModel", "TriggerAuthentication",
    "ClusterTriggerAuthentication", "ReferenceGrant", "PriorityClass", "ResourceQuota", "LimitRange",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Certificate", "Issuer", "Kustomization",
    "Component",
}  # fmt: skip


@dataclass
class Inventory:
    workloads: list[Workload] = field(default_factory=list)
    around: Surroundings = field(default_factory=Surroundings)
    skipped: dict[str, int] = field(default_factory=dict)  # kinds no check reads, with how many
    # operators' resources, derived once the whole input is read (a ServingRuntime may come after its user)
    operated: list[tuple[Mapping[str, Any], Source, str]] = field(default_factory=list)
    referred: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)  # ServingRuntimes, by kind
    notes: list[str] = field(default_factory=list)  # operators' resources that derived nothing, and why
    # the ConfigMaps' data by (namespace, name): the variables of `envFrom` and `configMapKeyRef`
    config_maps: dict[tuple[str, str], dict[str, str | None]] = field(default_factory=dict)
    # why a ConfigMap not among them is unknown, where it is not that the input lacks it (live: not granted)
    config_maps_unread: str = ""


_Reader = Callable[[Mapping[str, Any], str, Source], Any]
# kind -> (its reader, the Surroundings list it joins, whether one the reader refuses is still not a skipped kind)
_AROUND: dict[str, tuple[_Reader, str, bool]] = {
    **{
        k: (autoscalers.autoscaler, "autoscalers", False)
        for k in ("HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler")
    },
    "PodDisruptionBudget": (lambda obj, ns, _: model.pdb(obj, ns), "pdbs", True),
    "Service": (lambda obj, ns, _: model.service(obj, ns), "services", True),
    **{
        kind: (lambda obj, ns, _: frontends.frontend(obj, ns), "frontends", False)
        for kind in ("Ingress", "HTTPRoute", "Route")
    },
    "InferencePool": (lambda obj, ns, _: model.inference_pool(obj, ns), "inference_pools", False),
}


def add(inv: Inventory, obj: Mapping[str, Any], source: Source = NO_SOURCE, default_namespace: str = "default") -> None:
    """Sort one object into `inv`: a workload, an object around one, or a skipped kind."""
    kind = str(obj.get("kind") or "")
    ns = default_namespace
    if kind in workloads.WORKLOAD_KINDS:
        w = workloads.workload(obj, ns, source)
        if w is not None:
            inv.workloads.append(w)
            inv.around.workloads.append(w)
        return
    if operators.reader(obj) is not None:
        inv.operated.append((obj, source, ns))
        return
    if kind == "ConfigMap":
        key, data = environment.config_map(obj, ns)
        inv.config_maps[key] = data
        return
    if operators.referred(obj):
        inv.referred.setdefault(kind, []).append(obj)
        return
    if kind in _AROUND:
        read, joins, always = _AROUND[kind]
        item = read(obj, ns, source)
        if item is not None:
            getattr(inv.around, joins).append(item)
        if item is not None or always:
            return
    elif kind == "Node":
        if (n := nodes.node(obj)) is not None:
            inv.around.nodes = [*(inv.around.nodes or []), n]
        return
    elif (config := frontends.backend_config(obj, ns)) is not None:
        namespace, name, timeout = config
        inv.around.backend_configs[(namespace, name)] = timeout
        return
    if kind not in _QUIET_KINDS:
        label = (
            f"{obj.get('apiVersion', '')}/{kind}".lstrip("/") if kind else "document(s) that are not Kubernetes objects"
        )
        inv.skipped[label] = inv.skipped.get(label, 0) + 1


def finish(inv: Inventory) -> None:
    """Derive what each operator resource of the input generates (its workloads, autoscalers and Services),
    with the objects it refers to from anywhere in the input; once, after the last `add`. What such a resource
    generated is in the input too where it is a dump of a namespace or the live cluster: that workload (or
    resource: a KAITO InferenceSet's Workspace) is dropped, audited once as the resource the user edits, each
    finding with the field to change there. One whose resource is not in the input, or derives no workload
    (its runtime not in the input), stays audited as itself."""
    present = {_key(obj, ns) for obj, _, ns in inv.operated}
    derived_from: set[tuple[str, str, str]] = set()
    # the resources an operator resource of the input generated, last: their owner's reader derives them
    ordered = sorted(inv.operated, key=lambda entry: _owner(entry[0], entry[2]) in present)
    for obj, source, ns in ordered:
        if _owner(obj, ns) in derived_from:
            derived_from.add(_key(obj, ns))
            continue
        derived = operators.derive(obj, ns, source, inv.referred)
        if derived.workloads:
            derived_from.add(_key(obj, ns))
        inv.workloads += derived.workloads
        inv.around.workloads += derived.workloads
        inv.around.autoscalers += derived.autoscalers
        inv.around.frontends += derived.frontends
        inv.around.services += [model.Service(n, name, Selector(sel)) for n, name, sel in derived.services]
        inv.around.pdbs += [model.Pdb(n, name, Selector(sel)) for n, name, sel in derived.pdbs]
        if derived.note:
            namespace, name = meta(obj, ns)[:2]
            inv.notes.append(f"{obj.get('kind')} {namespace}/{name}: {derived.note}")
    generated = {id(w) for w in inv.workloads if (w.owner_kind, w.namespace, w.owner) in derived_from}
    inv.workloads = [w for w in inv.workloads if id(w) not in generated]
    inv.around.workloads = [w for w in inv.around.workloads if id(w) not in generated]
    inv.operated = []
    # the containers' variables from the ConfigMaps of the input, before any check reads an argument
    maps, unread = inv.config_maps, inv.config_maps_unread
    resolved = {id(w): environment.resolve_workload(w, maps, unread) for w in inv.workloads}
    inv.workloads = [resolved[id(w)] for w in inv.workloads]
    inv.around.workloads = [resolved.get(id(w), w) for w in inv.around.workloads]


def _key(obj: Mapping[str, Any], default_namespace: str) -> tuple[str, str, str]:
    """(kind, namespace, name) of an operator resource, as a generated workload's owner names it."""
    return (str(obj.get("kind") or ""), *meta(obj, default_namespace)[:2])


def _owner(obj: Mapping[str, Any], default_namespace: str) -> tuple[str, str, str]:
    """(kind, namespace, name) of the controller owner of an operator resource (a KAITO InferenceSet's Workspace)."""
    owner = owner_refs.controller(as_dict(obj.get("metadata")))
    return (str(owner.get("kind") or ""), meta(obj, default_namespace)[0], str(owner.get("name") or ""))


def build(objects: Iterable[Mapping[str, Any]], default_namespace: str = "default") -> Inventory:
    inv = Inventory()
    for obj in objects:
        add(inv, obj, default_namespace=default_namespace)
    finish(inv)
    return inv
