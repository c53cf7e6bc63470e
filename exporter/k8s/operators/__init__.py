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

from collections.abc import Callable, Mapping
from typing import Any

from exporter.k8s.fields import Source
from exporter.k8s.operators import dynamo, kaito, kaito_set, kserve, kuberay, nim
from exporter.k8s.operators.base import Derived, Refs

# (obj, default namespace, where it came from, the referable objects of the input by kind) -> what it derives
Reader = Callable[[Mapping[str, Any], str, Source, Refs], Derived]

# kind -> (apiVersion group, reader)
READERS: dict[str, tuple[str, Reader]] = {
    "InferenceService": ("serving.kserve.io/", kserve.read),
    "Workspace": ("kaito.sh/", kaito.read),
    "InferenceSet": ("kaito.sh/", kaito_set.read),
    "RayService": ("ray.io/", kuberay.read),
    "NIMService": ("apps.nvidia.com/", nim.read),
    "DynamoGraphDeployment": ("nvidia.com/", dynamo.read),
}
# kinds a reader refers to, kept from the input (not audited themselves)
REFERRED: dict[str, str] = {
    "ServingRuntime": "serving.kserve.io/",
    "ClusterServingRuntime": "serving.kserve.io/",
    "NIMCache": "apps.nvidia.com/",  # the model cache a NIMService mounts: nothing a check reads
}


def reader(obj: Mapping[str, Any]) -> Reader | None:
    """The reader of `obj`'s kind and API group, None when no operator reader owns it (OME's InferenceService
    shares KServe's kind in another group)."""
    found = READERS.get(str(obj.get("kind") or ""))
    if found is None or not str(obj.get("apiVersion") or "").startswith(found[0]):
        return None
    return found[1]


def referred(obj: Mapping[str, Any]) -> bool:
    group = REFERRED.get(str(obj.get("kind") or ""))
    return group is not None and str(obj.get("apiVersion") or "").startswith(group)


def derive(obj: Mapping[str, Any], namespace: str, source: Source, refs: Refs) -> Derived:
    read = reader(obj)
    return Derived(note="no operator reader") if read is None else read(obj, namespace, source, refs)


__all__ = ["READERS", "REFERRED", "Derived", "derive", "reader", "referred"]
