"""KAITO `InferenceSet` (kaito.sh/v1alpha1, v1beta1) as the Workspaces KAITO v0.12.0 creates for it, each
one the StatefulSet `exporter.k8s.operators.kaito` derives, and the ScaledObject the KEDA KAITO scaler makes.

Cited from github.com/kaito-project/kaito at tag v0.12.0 (0894eb2b567d48cd2d66afe579acb1542b226af4):

- api/v1beta1/inferenceset_types.go:120-124: `spec.replicas` Workspaces (`+kubebuilder:default:=1`), with
  the scale subresource on `.spec.replicas` (:171), which an autoscaler scales;
- pkg/utils/inferenceset/inferenceset.go:133-179 `NewWorkspaceForInferenceSet`: each Workspace is named
  `<name>-<random>` and copies `spec.template.inference` and the template's labels and annotations; its
  `resource.count` is unset (one node, one pod), and it is labelled `inferenceset.kaito.sh/created-by:
  <name>` (pkg/utils/consts/consts.go:205), which the Workspace's StatefulSet puts on its pods
  (pkg/workspace/manifests/manifests.go:138-144, 178); each Workspace has its own Service, none is shared;
- website/docs/keda-autoscaler-inference.md:175-180, 226-252: with the annotation
  `scaledobject.kaito.sh/auto-provision: "true"` the KEDA KAITO scaler makes a ScaledObject of the same name
  on the InferenceSet, `max-replicas` and `threshold` required, `metricName` `vllm:num_requests_waiting`
  unless set, and its HPA waits 300 s before a scale-down. The minimum is read from
  `scaledobject.kaito.sh/min-replicas`, else 1 as in the documented example. The scaler is a project of its
  own (kaito-project/keda-kaito-scaler) whose annotations change between its releases: this is the interface
  KAITO v0.12.0 documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.fields import Source, as_dict, as_int, meta
from exporter.k8s.operators import kaito
from exporter.k8s.operators.base import Derived, Refs
from exporter.k8s.workloads import Workload, pod_template

CREATED_BY = "inferenceset.kaito.sh/created-by"
SCALER = "scaledobject.kaito.sh/"
DEFAULT_METRIC = "vllm:num_requests_waiting"
SCALE_DOWN_WINDOW = 300
AUTOSCALER = "metadata.annotations scaledobject.kaito.sh/ (auto-provision, max-replicas, metricName, threshold)"


def _fields(template: bool) -> dict[str, str]:
    own = kaito.TEMPLATE_FIELDS if template else kaito.FIELDS
    fields = {k: f"spec.template.{v}" if v else "" for k, v in own.items()}
    return {**fields, "replicas": "spec.replicas", "autoscaler": AUTOSCALER, "release": kaito.RELEASE}


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, name, labels, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    inference = as_dict(as_dict(spec.get("template")).get("inference"))
    if not inference:
        return Derived(note="no spec.template.inference: nothing to serve")
    template = as_dict(inference.get("template"))
    pod = pod_template(template) if template else kaito.preset_pod(name, annotations.get("kaito.sh/runtime", "vllm"))
    pod = replace(pod, labels={**pod.labels, CREATED_BY: name} if template else {CREATED_BY: name})
    replicas = as_int(spec.get("replicas"))
    workload = Workload(
        "InferenceSet", namespace, name, labels, annotations, 1 if replicas is None else replicas, (pod,), source,
        fields=_fields(bool(template)),
    )  # fmt: skip
    scaler, note = scaled_object(name, namespace, annotations, source)
    return Derived((workload,), scaler, note=note)


def scaled_object(
    name: str, namespace: str, annotations: Mapping[str, str], source: Source
) -> tuple[tuple[Autoscaler, ...], str]:
    if annotations.get(SCALER + "auto-provision") != "true":
        return (), ""
    missing = [k for k in ("max-replicas", "threshold") if not annotations.get(SCALER + k)]
    if missing:
        wanted = " and ".join(SCALER + k for k in missing)
        return (), f"{wanted} missing (the KEDA KAITO scaler requires it): no ScaledObject is read"
    most = annotations[SCALER + "max-replicas"]
    if as_int(most) is None:
        return (), f"{SCALER}max-replicas {most!r} is not a count: no ScaledObject is read"
    metric = annotations.get(SCALER + "metricName") or DEFAULT_METRIC
    scaler = Autoscaler(
        kind="keda", namespace=namespace, name=name, target_kind="InferenceSet", target_name=name,
        min_replicas=as_int(annotations.get(SCALER + "min-replicas")) or 1,
        max_replicas=as_int(most),
        signals=(f"external:{metric}",), scale_down_window=SCALE_DOWN_WINDOW, cooldown=None, source=source,
    )  # fmt: skip
    return (scaler,), ""
