"""A container's variables read from the ConfigMaps of the input (pure), resolved before its arguments are read;
the input is the manifests of `audit -f`, or the live cluster's ConfigMaps (`exporter.audit.live`).

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

A value over `VALUE_LIMIT` bytes is withheld, from manifests and live alike (the live audit keeps no more of a
cluster's ConfigMaps, `kept`): a variable set from it is unknown, and says why; a file of it is not read.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from exporter.k8s.fields import as_dict, as_list, meta
from exporter.k8s.workloads import Container, EnvRef, PodTemplate, Workload

# (namespace, name) -> data; a value None is withheld: the key is set, its value not read
ConfigMaps = Mapping[tuple[str, str], Mapping[str, str | None]]

# The bytes (UTF-8) of a ConfigMap value read: an argument, a script or a wrapper's config is far shorter; a
# cluster's large values (dashboards, bundled manifests, CA bundles) are no engine's setting.
VALUE_LIMIT = 64 * 1024
WITHHELD = f"whose value is over the {VALUE_LIMIT // 1024} KiB read of a ConfigMap value"
_WITHHELD_KEYS = "withheld"  # `kept`'s record: the keys of `data` whose values it did not keep


def _over(value: str) -> bool:
    if len(value) > VALUE_LIMIT:
        return True
    return 4 * len(value) > VALUE_LIMIT and len(value.encode("utf-8", "surrogatepass")) > VALUE_LIMIT


def config_map(obj: Mapping[str, Any], default_namespace: str) -> tuple[tuple[str, str], dict[str, str | None]]:
    """(namespace, name) and the text `data` of a ConfigMap (its `binaryData` is no variable's value), a value
    over `VALUE_LIMIT` bytes (or one `kept` withheld) None."""
    namespace, name = meta(obj, default_namespace)[:2]
    data: dict[str, str | None] = {}
    for k, v in as_dict(obj.get("data")).items():
        data[str(k)] = None if _over(str(v)) else str(v)
    data.update((str(k), None) for k in as_list(obj.get(_WITHHELD_KEYS)))
    return (namespace, name), data


def kept(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What the audit keeps of a ConfigMap the API server lists: its name, namespace and the values of `data`
    that `config_map` reads (never `binaryData`, never a value over `VALUE_LIMIT`: only its key is kept).
    Whether a workload refers to it cannot be told here (the workload may come later): every ConfigMap is
    kept, each at most a few keys' worth of memory beyond its short values."""
    metadata = as_dict(obj.get("metadata"))
    data = as_dict(obj.get("data"))
    small = {str(k): v for k, v in data.items() if isinstance(v, str) and not _over(v)}
    withheld = sorted(str(k) for k in data if str(k) not in small)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {k: metadata[k] for k in ("name", "namespace") if k in metadata},
        "data": small,
        **({_WITHHELD_KEYS: withheld} if withheld else {}),
    }


def _unknown(ref: EnvRef, data: Mapping[str, str | None] | None, unread: str) -> EnvRef:
    """`ref`, not resolved, with why: its value withheld, or (`unread`) its ConfigMap could not be read (then
    an optional one may be there all the same: it is not read as absent)."""
    if data is not None:
        return replace(ref, why=WITHHELD) if ref.key in data else ref
    return replace(ref, why=unread, optional=False) if unread and ref.kind == "ConfigMap" else ref


def resolve(c: Container, namespace: str, maps: ConfigMaps, unread: str = "") -> Container:
    """`c` with the variables its ConfigMaps in `maps` set added to `env` in the kubelet's order; the
    references not resolved stay in `env_refs`, and an `envFrom` key whose value is withheld joins them (its
    `key` set). `unread`: why a ConfigMap not in `maps` is unknown, where the input may well lack it."""
    if not c.env_refs:
        return c
    env: dict[str, str] = {}
    unknown: list[EnvRef] = []
    withheld: dict[str, EnvRef] = {}  # envFrom's variables set, their values not read
    for ref in (r for r in c.env_refs if r.after < 0):
        data = maps.get((namespace, ref.name)) if ref.kind == "ConfigMap" else None
        if data is None:
            unknown.append(ref := _unknown(ref, None, unread))
            if not ref.optional:  # it may set any variable of an earlier source (an optional one may be absent)
                for name in [name for name in env if name.startswith(ref.variable)]:
                    del env[name]
            continue
        for key, value in data.items():
            variable = ref.variable + key
            if value is None:
                env.pop(variable, None)
                withheld[variable] = replace(ref, variable=variable, key=key, optional=False, why=WITHHELD)
            else:
                env[variable] = value
                withheld.pop(variable, None)
    unknown += withheld.values()
    listed = [r for r in c.env_refs if r.after >= 0]
    for position in range(len(c.env) + 1):
        for ref in (r for r in listed if r.after == position):
            data = maps.get((namespace, ref.name)) if ref.kind == "ConfigMap" else None
            value = None if data is None else data.get(ref.key)
            env.pop(ref.variable, None)  # replaced: by its value, or unknown
            if value is None:
                unknown.append(_unknown(ref, data, unread))
            else:
                env[ref.variable] = value
        if position < len(c.env):
            name, value = c.env[position]
            env.pop(name, None)  # a later definition comes after the earlier ones it may expand
            env[name] = value
    # an envFrom key withheld and set again later is known
    unknown = [r for r in unknown if not (r.after < 0 and r.key and r.variable in env)]
    return replace(c, env=tuple(env.items()), env_refs=tuple(unknown))


def mounted(c: Container, pod: PodTemplate, namespace: str, maps: ConfigMaps) -> tuple[tuple[str, str | None], ...]:
    """(path in the container, text) of each file of a ConfigMap volume `c` mounts whose ConfigMap is in `maps`:
    a key at `<mountPath>/<key>` (or the path its `items` give), a `subPath` mount at the mount path itself;
    the text None where the value is withheld."""
    out: list[tuple[str, str | None]] = []
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


def resolve_workload(w: Workload, maps: ConfigMaps, unread: str = "") -> Workload:
    """`w` with every container's variables resolved from `maps` (the ConfigMaps of `w`'s namespace), and the
    files of the ConfigMap volumes each mounts; `unread`: see `resolve`."""

    def one(c: Container, pod: PodTemplate) -> Container:
        c = resolve(c, w.namespace, maps, unread)
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
