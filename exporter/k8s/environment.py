"""A container's variables read from the ConfigMaps of the input (pure), resolved before its arguments are read.

The kubelet sets a container's variables in order (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go
makeEnvironmentVariables): each `envFrom` source first (every key of the ConfigMap, its `prefix` before it;
a later source's key wins), then each `env` entry in turn (a later one wins; "Values defined by an Env with
a duplicate key will take precedence", k8s.io/api core/v1 types.go Container.EnvFrom), a
`valueFrom.configMapKeyRef` read from its ConfigMap.

Only ConfigMaps are read. A Secret's values never are, whether or not the Secret is in the input: a variable
from one stays unknown, as does one from a ConfigMap the input lacks (the cluster may have it) and one from
the pod's fields. An unknown variable is kept in `Container.env_refs`, which `exporter.k8s.arguments` names
when an argument refers to it; it is never read as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from exporter.k8s.fields import as_dict, meta
from exporter.k8s.workloads import Container, EnvRef, Workload

ConfigMaps = Mapping[tuple[str, str], Mapping[str, str]]  # (namespace, name) -> data


def config_map(obj: Mapping[str, Any], default_namespace: str) -> tuple[tuple[str, str], dict[str, str]]:
    """(namespace, name) and the text `data` of a ConfigMap (its `binaryData` is no variable's value)."""
    namespace, name = meta(obj, default_namespace)[:2]
    return (namespace, name), {str(k): str(v) for k, v in as_dict(obj.get("data")).items()}


def _value(ref: EnvRef, namespace: str, maps: ConfigMaps) -> str | None:
    """The value of a `configMapKeyRef` variable; None when it is not known from `maps`."""
    data = maps.get((namespace, ref.name)) if ref.kind == "ConfigMap" else None
    return None if data is None else data.get(ref.key)


def resolve(c: Container, namespace: str, maps: ConfigMaps) -> Container:
    """`c` with the variables its ConfigMaps in `maps` set added to `env` in the kubelet's order; the
    references not resolved stay in `env_refs`."""
    if not c.env_refs:
        return c
    env: dict[str, str] = {}
    unknown: list[EnvRef] = []
    for ref in (r for r in c.env_refs if r.after < 0):
        data = maps.get((namespace, ref.name)) if ref.kind == "ConfigMap" else None
        if data is None:
            unknown.append(ref)
        else:
            env.update((ref.variable + key, value) for key, value in data.items())
    listed = [r for r in c.env_refs if r.after >= 0]
    for position in range(len(c.env) + 1):
        for ref in (r for r in listed if r.after == position):
            value = _value(ref, namespace, maps)
            env.pop(ref.variable, None)  # replaced: by its value, or unknown
            if value is None:
                unknown.append(ref)
            else:
                env[ref.variable] = value
        if position < len(c.env):
            name, value = c.env[position]
            env.pop(name, None)  # a later definition comes after the earlier ones it may expand
            env[name] = value
    return replace(c, env=tuple(env.items()), env_refs=tuple(unknown))


def resolve_workload(w: Workload, maps: ConfigMaps) -> Workload:
    """`w` with every container's variables resolved from `maps` (the ConfigMaps of `w`'s namespace)."""
    if not any(c.env_refs for pod in w.pods for c in (*pod.containers, *pod.init_containers)):
        return w
    pods = tuple(
        replace(
            pod,
            containers=tuple(resolve(c, w.namespace, maps) for c in pod.containers),
            init_containers=tuple(resolve(c, w.namespace, maps) for c in pod.init_containers),
        )
        for pod in w.pods
    )
    return replace(w, pods=pods)
