"""KServe `InferenceService` (serving.kserve.io/v1beta1) as the predictor KServe v0.20.0 generates in
Standard (raw Deployment) mode, or in Knative mode as the Revision Knative runs (`kserve_knative`), with its
ServingRuntime or ClusterServingRuntime from the same input.

Cited from github.com/kserve/kserve at tag v0.20.0 (1fb781055dd1567164358233e1125142ca6ef1fe):

- the mode is the `serving.kserve.io/deploymentMode` annotation (`RawDeployment` is read as `Standard`,
  pkg/constants/constants.go:559-585); without it the controller's configured default applies, `Serverless`
  in the shipped config/configmap/inferenceservice.yaml:743-746 and `Knative` in the chart's values.yaml:109,
  so an InferenceService without it is read in Knative mode, with a note. Knative mode generates a Knative
  Service scaled by Knative's autoscaler: `exporter.k8s.operators.kserve_knative`;
- the runtime is `spec.predictor.model.runtime`, else the ServingRuntime (namespace first) or
  ClusterServingRuntime whose `supportedModelFormats` has the model's format with `autoSelect`, highest
  `priority` first (`GetSupportingRuntimes`); its container `kserve-container` is merged with the
  predictor's model container: the predictor's fields override, `args` are appended to the runtime's
  (pkg/controller/v1beta1/inferenceservice/utils/utils.go:250-264), and the pod spec's nodeSelector,
  affinity and tolerations come from the runtime unless the predictor sets them (utils.go:267-290);
- the runtimes' image placeholders are set by config/runtimes/kustomization.yaml (`vllmserver` is
  `vllm/vllm-openai`, `huggingfaceserver` is `kserve/huggingfaceserver`);
- the Deployment `<name>-predictor` starts at `minReplicas` (default 1, constants.go:223), and unless
  `serving.kserve.io/autoscalerClass` names another class an HPA of the same name scales it between
  `minReplicas` (at least 1) and `maxReplicas` (at least the minimum) on `scaleMetric` (cpu unless set) at
  `scaleTarget`% (80, constants.go:298), with an empty `behavior` (the HPA's defaults)
  (pkg/controller/v1beta1/inferenceservice/reconcilers/hpa/hpa_reconciler.go:60-183, 252-261);
- pods are labelled `serving.kserve.io/inferenceservice: <name>` and `component: predictor`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.fields import Source, as_dict, as_int, as_list, meta, strs
from exporter.k8s.operators import kserve_knative
from exporter.k8s.operators.base import Derived, Refs, listed, named
from exporter.k8s.workloads import Workload, pod_template

RELEASE = "KServe v0.20.0"
MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
KNATIVE_DEFAULT = "Knative (the default)"
CLASS_ANNOTATION = "serving.kserve.io/autoscalerClass"
CONTAINER = "kserve-container"
RUNTIME_KINDS = ("ServingRuntime", "ClusterServingRuntime")
IMAGES = {  # config/runtimes/kustomization.yaml `images`
    "vllmserver": "vllm/vllm-openai:latest",
    "huggingfaceserver": "kserve/huggingfaceserver:latest",
    "huggingfaceserver-gpu": "kserve/huggingfaceserver:latest-gpu",
}
DEFAULT_MIN_REPLICAS = 1
DEFAULT_UTILIZATION = 80
_POD_FIELDS = ("nodeSelector", "affinity", "tolerations", "volumes", "imagePullSecrets", "schedulerName")
_COMPONENT_FIELDS = {"minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "model", "containers"}


def _fields(model: bool) -> dict[str, str]:
    where = "spec.predictor.model" if model else "spec.predictor.containers[]"
    return {
        "replicas": "spec.predictor.minReplicas",
        "autoscaler": "spec.predictor.minReplicas, maxReplicas, scaleMetric (and serving.kserve.io/autoscalerClass)",
        "readinessProbe": f"{where}.readinessProbe",
        "startupProbe": f"{where}.startupProbe",
        "terminationGracePeriodSeconds": "spec.predictor.terminationGracePeriodSeconds",
        "preStop": f"{where}.lifecycle.preStop",
        "tolerations": "spec.predictor.tolerations",
        "args": f"{where}.args",
        "release": RELEASE,
    }


def mode(annotations: Mapping[str, str]) -> str:
    value = annotations.get(MODE_ANNOTATION, "")
    return "Standard" if value in ("Standard", "RawDeployment") else value or KNATIVE_DEFAULT


def runtime_of(model: Mapping[str, Any], namespace: str, refs: Refs) -> tuple[Mapping[str, Any] | None, str]:
    """The runtime object serving `model`, and how it was named (for the note when it is not in the input)."""
    name = str(model.get("runtime") or "")
    if name:
        return named(refs, RUNTIME_KINDS, name, namespace), f"runtime {name}"
    fmt = str(as_dict(model.get("modelFormat")).get("name") or "")
    candidates = []
    for rank, kind in enumerate(RUNTIME_KINDS):
        for obj in refs.get(kind, ()):
            if kind == "ServingRuntime" and meta(obj, namespace)[0] != namespace:
                continue
            for f in listed(as_dict(obj.get("spec")).get("supportedModelFormats")):
                if str(f.get("name") or "").lower() == fmt.lower() and f.get("autoSelect") is True:
                    candidates.append((rank, -(as_int(f.get("priority")) or 0), obj))
    candidates.sort(key=lambda c: (c[0], c[1]))
    return (candidates[0][2] if candidates else None), f"a runtime for model format {fmt or '(none)'}"


def merge_container(runtime: Mapping[str, Any], isvc: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**runtime, **{k: v for k, v in isvc.items() if k not in ("args", "env", "resources")}}
    merged["args"] = [*as_list(runtime.get("args")), *as_list(isvc.get("args"))]
    env = {str(e.get("name")): e for e in listed(runtime.get("env"))}
    env.update({str(e.get("name")): e for e in listed(isvc.get("env"))})
    merged["env"] = list(env.values())
    resources = {k: dict(as_dict(v)) for k, v in as_dict(runtime.get("resources")).items()}
    for section, values in as_dict(isvc.get("resources")).items():
        resources.setdefault(section, {}).update(as_dict(values))
    merged["resources"] = resources
    image = str(merged.get("image") or "")
    base = image.split(":", 1)[0]
    if image.endswith(":replace") and base in IMAGES:
        merged["image"] = IMAGES[base]
    return merged


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, name, labels, annotations = meta(obj, default_namespace)
    how = mode(annotations)
    if how not in ("Standard", "Knative", "Serverless", KNATIVE_DEFAULT):
        return Derived(note=f"deploymentMode {how}: only Standard and Knative (Serverless) modes are read")
    serverless = how != "Standard"
    predictor = as_dict(as_dict(obj.get("spec")).get("predictor"))
    model = as_dict(predictor.get("model"))
    pod_spec = {k: v for k, v in predictor.items() if k not in _COMPONENT_FIELDS}
    if model:
        runtime, wanted = runtime_of(model, namespace, refs)
        if runtime is None:
            return Derived(note=f"{wanted} is not in the input: add its ServingRuntime or ClusterServingRuntime")
        rspec = as_dict(runtime.get("spec"))
        containers = listed(rspec.get("containers"))
        own = {k: v for k, v in model.items() if k not in ("modelFormat", "runtime", "storageUri", "protocolVersion")}
        containers = [merge_container(c, own) if c.get("name") == CONTAINER else dict(c) for c in containers]
        pod_spec = {**{k: rspec[k] for k in _POD_FIELDS if k in rspec}, **pod_spec}
    else:
        containers = listed(predictor.get("containers"))
    pod_labels = {
        **strs(as_dict(predictor.get("labels"))),
        "serving.kserve.io/inferenceservice": name,
        "component": "predictor",
    }
    raw_pod = {"metadata": {"labels": pod_labels}, "spec": {**pod_spec, "containers": containers}}
    if serverless:
        raw_pod = kserve_knative.revision_pod(raw_pod, predictor)
    minimum = as_int(predictor.get("minReplicas"))
    fields = kserve_knative.fields(_fields(bool(model))) if serverless else _fields(bool(model))
    workload = Workload(
        "InferenceService", namespace, name, labels, annotations,
        DEFAULT_MIN_REPLICAS if minimum is None else minimum, (pod_template(raw_pod),), source, fields=fields,
    )  # fmt: skip
    if serverless:
        kpa = kserve_knative.kpa(name, namespace, predictor, annotations, source)
        note = "" if how != KNATIVE_DEFAULT else "no serving.kserve.io/deploymentMode: read as Knative, the default"
        return Derived((workload,), (kpa,) if kpa else (), note=note)
    scalers: tuple[Autoscaler, ...] = ()
    if annotations.get(CLASS_ANNOTATION, "hpa") == "hpa":
        scalers = (hpa(name, namespace, predictor, source),)
    return Derived((workload,), scalers)


def hpa(name: str, namespace: str, predictor: Mapping[str, Any], source: Source) -> Autoscaler:
    minimum = as_int(predictor.get("minReplicas"))
    low = DEFAULT_MIN_REPLICAS if minimum is None or minimum < DEFAULT_MIN_REPLICAS else minimum
    high = max(as_int(predictor.get("maxReplicas")) or 0, low)
    metric = str(predictor.get("scaleMetric") or "cpu")
    return Autoscaler(
        kind="hpa", namespace=namespace, name=f"{name}-predictor", target_kind="InferenceService",
        target_name=name, min_replicas=low, max_replicas=high, signals=(f"resource:{metric}",),
        scale_down_window=None, cooldown=None, source=source,
    )  # fmt: skip
