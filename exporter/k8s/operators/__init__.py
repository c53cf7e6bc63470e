"""Serving operators' resources as the workloads they generate (pure): one module per operator, one line each
in `READERS`.

A reader takes the resource the user writes (a KServe InferenceService, a KAITO Workspace) and the objects
it refers to in the same input (a ServingRuntime), and derives what the operator would create from it at a
named release: the pod template(s), with the operator's own defaults (cited in each module), and the
autoscalers and Services it makes. The derived `Workload` keeps the resource's kind and name, so every
finding names what the user edits, and `Workload.fields` says where in it each aspect is set (`replicas`,
`autoscaler`, `readinessProbe`, `startupProbe`, `terminationGracePeriodSeconds`, `preStop`, `tolerations`,
`args`); "" where the operator sets it and the resource has no field for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from exporter.k8s.fields import Source
from exporter.k8s.operators import dynamo, kaito, kaito_set, kserve, kuberay, nim, ome, rbg
from exporter.k8s.operators.base import Derived, Refs

# (obj, default namespace, where it came from, the referable objects of the input by kind) -> what it derives
Reader = Callable[[Mapping[str, Any], str, Source, Refs], Derived]

# (kind, apiVersion group) -> reader: two operators may share a kind (KServe's and OME's InferenceService)
READERS: dict[tuple[str, str], Reader] = {
    ("InferenceService", "serving.kserve.io/"): kserve.read,
    ("Workspace", "kaito.sh/"): kaito.read,
    ("RayService", "ray.io/"): kuberay.read,
    ("NIMService", "apps.nvidia.com/"): nim.read,
    ("InferenceService", "ome.io/"): ome.read,
    ("RoleBasedGroup", "workloads.x-k8s.io/"): rbg.read,
    ("InferenceSet", "kaito.sh/"): kaito_set.read,
    ("DynamoGraphDeployment", "nvidia.com/"): dynamo.read,
}
# (kind, apiVersion group) of what a reader refers to, kept from the input (not audited themselves)
REFERRED: frozenset[tuple[str, str]] = frozenset({
    ("ServingRuntime", "serving.kserve.io/"),
    ("ClusterServingRuntime", "serving.kserve.io/"),
    ("NIMCache", "apps.nvidia.com/"),  # the model cache a NIMService mounts: nothing a check reads
    ("ServingRuntime", "ome.io/"),
    ("ClusterServingRuntime", "ome.io/"),
    ("BaseModel", "ome.io/"),  # the model an OME InferenceService serves: nothing a check reads
    ("ClusterBaseModel", "ome.io/"),
    ("RoleBasedGroupScalingAdapter", "workloads.x-k8s.io/"),  # an RBG role's, scaled through by an autoscaler
})  # fmt: skip


def _key(obj: Mapping[str, Any], table: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    kind, api = str(obj.get("kind") or ""), str(obj.get("apiVersion") or "")
    return next(((k, g) for k, g in table if k == kind and api.startswith(g)), None)


def reader(obj: Mapping[str, Any]) -> Reader | None:
    """The reader of `obj`'s kind and API group, None when no operator reader owns it."""
    key = _key(obj, READERS)
    return None if key is None else READERS[key]


def referred(obj: Mapping[str, Any]) -> bool:
    return _key(obj, REFERRED) is not None


def derive(obj: Mapping[str, Any], namespace: str, source: Source, refs: Refs) -> Derived:
    read = reader(obj)
    return Derived(note="no operator reader") if read is None else read(obj, namespace, source, refs)


__all__ = ["READERS", "REFERRED", "Derived", "derive", "reader", "referred"]
