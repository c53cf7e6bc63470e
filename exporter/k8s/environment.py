"""A container's variables read from the ConfigMaps of the input (pure), resolved before its arguments are read.

The kubelet sets a container's variables in order (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go
makeEnvironmentVariables): each `envFrom` source first (every key of the ConfigMap, its `prefix` before it;
a later source's key wins), then each `env` entry in turn (a later one wins; "Values defined by an Env with
a duplicate key will take precedence", k8s.io/api core/v1 types.go Container.EnvFrom), a
`valueFrom.configMapKeyRef` read from its ConfigMap. An `envFrom` source the input lacks may set any variable
of the sources before it, so those are unknown too, unless it is `optional: true` (read as absent then:
what the kubelet does when the cluster lacks it too).

Only ConfigMaps are read. A Secret's values never are, whether or not the Secret is in the input: a variable
from one stays unknown, as does one from a ConfigMap the input lacks (the cluster may have it) and one from
the pod's fields. An unknown variable is kept in `Container.env_refs`, which `exporter.k8s.arguments` names
when an argument refers to it; it is never read as absent.

The files of the ConfigMap volumes a container mounts are read from the input too (`Container.files`): the
script its command runs, a wrapper's config file (`exporter.audit.wrappers`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from exporter.k8s.fields import as_dict, meta
from exporter.k8s.workloads import Container, EnvRef, PodTemplate, Workload

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
            if not ref.optional:  # it may set any variable of an earlier source (an optional one may be absent)
                for name in [name for name in env if name.startswith(ref.variable)]:
                    del env[name]
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


def mounted(c: Container, pod: PodTemplate, namespace: str, maps: ConfigMaps) -> tuple[tuple[str, str], ...]:
    """(path in the container, text) of each file of a ConfigMap volume `c` mounts whose ConfigMap is in `maps`:
    a key at `<mountPath>/<key>` (or the path its `items` give), a `subPath` mount at the mount path itself."""
    out: list[tuple[str, str]] = []
    volumes = {volume: (name, dict(items)) for volume, name, items in pod.config_volumes}
    for path, volume, sub_path in c.mounts:
        if volume not in volumes or (data := maps.get((namespace, volumes[volume][0]))) is None:
            continue
        items = volumes[volume][1]
        files = {items[k]: data[k] for k in items if k in data} if items else dict(data)
        if sub_path:
            out += [(path, files[sub_path])] if sub_path in files else []
        else:
            out += [(posixpath.join(path, name), text) for name, text in files.items()]
    return tuple(out)


def resolve_workload(w: Workload, maps: ConfigMaps) -> Workload:
    """`w` with every container's variables resolved from `maps` (the ConfigMaps of `w`'s namespace), and the
    files of the ConfigMap volumes each mounts."""

    def one(c: Container, pod: PodTemplate) -> Container:
        c = resolve(c, w.namespace, maps)
        files = mounted(c, pod, w.namespace, maps)
        return replace(c, files=files) if files else c

    pods = tuple(
        replace(
            pod,
            containers=tuple(one(c, pod) for c in pod.containers),
            init_containers=tuple(one(c, pod) for c in pod.init_containers),
        )
        for pod in w.pods
    )
    return replace(w, pods=pods)
