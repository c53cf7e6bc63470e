"""OME `InferenceService` (ome.io/v1beta1) as the Deployments OME v0.1.5 generates for its engine, decoder and
router components, with the `ServingRuntime` or `ClusterServingRuntime` (ome.io) it names from the same input.

Cited from github.com/sgl-project/ome at tag v0.1.5 (957f541e469f22333282e4287d5b29b87044b935),
pkg/controller/v1beta1/inferenceservice/ unless named:

- utils/reconciliation.go:69-103 and utils/merging.go:59-143: a component exists only where the
  InferenceService has it (`spec.engine`, `spec.decoder`, `spec.router`); the runtime's `engineConfig`,
  `decoderConfig`, `routerConfig` is the base and the InferenceService's component is a strategic merge patch
  over it (maps merged, named lists such as `containers`, `env`, `volumes` merged by name, other lists
  replaced);
- utils/deployment.go:12-34, 37-98: `leader`/`worker` make an engine or decoder MultiNode (a
  LeaderWorkerSet), `minReplicas: 0` makes the engine (unless a decoder is present) or the router Serverless
  (a Knative Service), the engine's `ome.io/deploymentMode` annotation names another mode; else
  RawDeployment; RawDeployment and MultiNode components are read, each of the others named in a note;
- components/engine.go:246-265, decoder.go:248, router.go:224: the Deployment is `<name>-engine`,
  `<name>-decoder`, `<name>-router`; components/base.go:425-452 labels its pods
  `ome.io/inferenceservice: <name>`, `component: <engine|decoder|router>`, `serving-runtime: <runtime>`, and
  reconcilers/deployment/deployment_reconciler.go:46-77 adds `app: <deployment>`, which the Service
  (reconcilers/service/service_reconciler.go:112) and the PodDisruptionBudget select;
- reconcilers/common/podspec_reconciler.go:125-160: the component's `runner` is the container of its name in
  the pod spec (appended when none has it);
- reconcilers/deployment/deployment_reconciler.go:117-175: the grace period is the pod spec's, else the
  API's 30 s; the container `ome-container` without a readiness probe gets a TCP one on its first port every
  10 s × 3; no startup probe and no preStop hook are added;
- reconcilers/raw/raw_kube_reconciler.go:83-105: each RawDeployment component also gets a Service, an
  autoscaler and a PodDisruptionBudget; reconcilers/pdb/pdb_reconciler.go:42-76: `minAvailable` /
  `maxUnavailable` as written, else `maxUnavailable: 1`;
- reconcilers/autoscaler/autoscaler_reconciler.go:70-106 and reconcilers/hpa/hpa_reconciler.go:45-120,
  160-167: unless `ome.io/autoscalerClass` names another class (default `hpa`, pkg/constants/constants.go:202),
  an HPA of the Deployment's name scales it between `minReplicas` (at least 1, constants.go:191) and
  `maxReplicas` (at least the minimum) on `scaleMetric` (cpu unless set) at `scaleTarget`% (80,
  constants.go:246), with no `behavior` (the HPA's defaults); the Deployment itself sets no replicas (the
  API's 1) and the HPA sets them. An HPA pinned at `minReplicas` = `maxReplicas` cannot scale, and is read
  as the fixed count it holds.

The router (sglang_router with `--service-discovery`) finds the engine pods itself and picks each request's
engine, so an engine behind a router is not routed round-robin by the Service.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.fields import Source, as_dict, as_int, meta, strs
from exporter.k8s.operators.base import Derived, Refs, listed, merge
from exporter.k8s.workloads import Workload, pod_template

RELEASE = "OME v0.1.5"
GROUP = "ome.io/"
RUNTIME_KINDS = ("ServingRuntime", "ClusterServingRuntime")
COMPONENTS = ("engine", "decoder", "router")
CONFIGS = {"engine": "engineConfig", "decoder": "decoderConfig", "router": "routerConfig"}
MAIN_CONTAINER = "ome-container"
MODE_ANNOTATION = "ome.io/deploymentMode"
CLASS_ANNOTATION = "ome.io/autoscalerClass"
DEFAULT_MIN_REPLICAS = 1
DEFAULT_UTILIZATION = 80
ROUTED_BY = "the InferenceService's router (sglang_router, service discovery)"
_COMPONENT_FIELDS = {
    "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "containerConcurrency", "timeoutSeconds",
    "canaryTrafficPercent", "labels", "annotations", "minAvailable", "maxUnavailable", "deploymentStrategy",
    "kedaConfig", "runner", "leader", "worker", "config",
}  # fmt: skip


def _fields(component: str) -> dict[str, str]:
    at = f"spec.{component}"
    return {
        "replicas": f"{at}.minReplicas",
        "autoscaler": f"{at}.minReplicas, maxReplicas, scaleMetric, scaleTarget (and {CLASS_ANNOTATION})",
        "readinessProbe": f"{at}.runner.readinessProbe",
        "startupProbe": f"{at}.runner.startupProbe",
        "terminationGracePeriodSeconds": f"{at}.terminationGracePeriodSeconds",
        "preStop": f"{at}.runner.lifecycle.preStop",
        "tolerations": f"{at}.tolerations",
        "args": f"{at}.runner.args",
        "release": RELEASE,
    }


def runtime_of(spec: Mapping[str, Any], namespace: str, refs: Refs) -> tuple[Mapping[str, Any] | None, str]:
    name = str(as_dict(spec.get("runtime")).get("name") or "")
    if not name:
        return None, "no spec.runtime.name: OME picks a runtime by the model's format and size; name it"
    for kind in RUNTIME_KINDS:
        for obj in refs.get(kind, ()):
            if not str(obj.get("apiVersion") or "").startswith(GROUP):
                continue
            ns_, found = meta(obj, namespace)[:2]
            if found == name and (kind.startswith("Cluster") or ns_ == namespace):
                return obj, ""
    return None, f"runtime {name} is not in the input: add its ome.io ServingRuntime or ClusterServingRuntime"


def mode(component: str, merged: Mapping[str, Any], decoder: bool) -> str:
    """utils/deployment.go:12-34, 37-98: the engine's `ome.io/deploymentMode` annotation, else `leader`/`worker`
    (MultiNode), else `minReplicas: 0` (Serverless; the engine not with a decoder); a decoder is never
    Serverless; a router is Serverless at `minReplicas: 0`."""
    if component == "engine" and strs(merged.get("annotations")).get(MODE_ANNOTATION):
        return strs(merged.get("annotations"))[MODE_ANNOTATION]
    if component != "router" and (merged.get("leader") is not None or merged.get("worker") is not None):
        return "MultiNode"
    if as_int(merged.get("minReplicas")) == 0 and (component == "router" or (component == "engine" and not decoder)):
        return "Serverless"
    return "RawDeployment"


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, name, labels, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    runtime, why = runtime_of(spec, namespace, refs)
    if runtime is None:
        return Derived(note=why)
    rspec = as_dict(runtime.get("spec"))
    runtime_name = meta(runtime, namespace)[1]
    present = [c for c in COMPONENTS if isinstance(spec.get(c), dict)]
    if "engine" not in present:
        return Derived(note="no spec.engine (a mapping): OME generates no engine without one")
    routed = "router" in present
    workloads: list[Workload] = []
    scalers: list[Autoscaler] = []
    services: list[tuple[str, str, dict[str, str]]] = []
    odd: list[str] = []
    for component in present:
        merged = as_dict(merge(as_dict(rspec.get(CONFIGS[component])), as_dict(spec.get(component))))
        how = mode(component, merged, "decoder" in present)
        if how == "MultiNode":
            found = multi_node(merged, namespace, name, component, present, labels, annotations, runtime_name, source)
            workloads += [found] if found else []
            odd += [] if found else [f"spec.{component}.leader has no runner and no container: nothing to read"]
            continue
        if how != "RawDeployment":
            odd.append(f"spec.{component} is deployed {how}: only RawDeployment and MultiNode components are read")
            continue
        deployment = f"{name}-{component}"
        pod_spec = {k: v for k, v in merged.items() if k not in _COMPONENT_FIELDS}
        runner = as_dict(merged.get("runner"))
        containers = listed(pod_spec.get("containers"))
        if runner:
            containers = merge(containers, [runner], "containers")
        containers = [_default_readiness(c) for c in containers]
        if not containers:
            odd.append(f"spec.{component} has no runner and no container: nothing to read")
            continue
        component_annotations = {**annotations, **strs(merged.get("annotations"))}
        pod_labels = {
            **labels,
            **strs(merged.get("labels")),
            "ome.io/inferenceservice": name,
            "component": component,
            "serving-runtime": runtime_name,
            "app": deployment,
        }
        template = {"metadata": {"labels": pod_labels, "annotations": component_annotations},
                    "spec": {**pod_spec, "containers": containers}}  # fmt: skip
        scaler = None
        if component_annotations.get(CLASS_ANNOTATION, "hpa") == "hpa":
            scaler = hpa(namespace, deployment, _wname(name, component, present), merged, source)
            if scaler.max_replicas != scaler.min_replicas:  # one pinned at min = max cannot scale: a fixed count
                scalers.append(scaler)
        elif component_annotations.get(CLASS_ANNOTATION) != "external":
            odd.append(f"spec.{component}: {CLASS_ANNOTATION} {component_annotations[CLASS_ANNOTATION]} is not read")
        workloads.append(
            Workload(
                "InferenceService", namespace, _wname(name, component, present), labels, annotations,
                scaler.min_replicas if scaler else 1, (pod_template(template),), source,
                fields=_fields(component), routed_by=ROUTED_BY if routed and component != "router" else "",
            )
        )  # fmt: skip
        services.append((namespace, deployment, {"app": deployment}))
    return Derived(tuple(workloads), tuple(scalers), tuple(services), note="; ".join(odd), pdbs=tuple(services))


def multi_node(
    merged: Mapping[str, Any], namespace: str, name: str, component: str, present: list[str],
    labels: dict[str, str], annotations: dict[str, str], runtime: str, source: Source,
) -> Workload | None:  # fmt: skip
    """reconcilers/lws/lws_reconciler.go:46-133: the LeaderWorkerSet of `minReplicas` (1 when unset) groups,
    the leader's and the worker's pod spec each with its runner (components/engine.go:268-345), the API's
    grace period unless set, no default probe, no HPA and no PodDisruptionBudget
    (reconcilers/multinode/multinode_reconciler.go:79-95: the LeaderWorkerSet and a Service)."""
    pods = []
    for part in ("leader", "worker"):
        spec = as_dict(merged.get(part))
        runner = as_dict(spec.get("runner"))
        containers = listed(spec.get("containers"))
        containers = merge(containers, [runner], "containers") if runner else containers
        if not containers:
            if part == "leader":
                return None
            continue
        pod_spec = {k: v for k, v in spec.items() if k not in ("runner", "size")}
        pod_labels = {**labels, **strs(merged.get("labels")), "ome.io/inferenceservice": name,
                      "component": component, "serving-runtime": runtime}  # fmt: skip
        if part == "leader":
            pod_labels["app"] = f"{name}-{component}"
        pods.append(pod_template({"metadata": {"labels": pod_labels}, "spec": {**pod_spec, "containers": containers}}))
    at = f"spec.{component}.leader"
    fields = {**_fields(component), "autoscaler": "", "readinessProbe": f"{at}.runner.readinessProbe",
              "startupProbe": f"{at}.runner.startupProbe", "terminationGracePeriodSeconds":
              f"{at}.terminationGracePeriodSeconds", "preStop": f"{at}.runner.lifecycle.preStop",
              "tolerations": f"{at}.tolerations", "args": f"{at}.runner.args"}  # fmt: skip
    minimum = as_int(merged.get("minReplicas"))
    return Workload(
        "InferenceService", namespace, _wname(name, component, present), labels, annotations,
        1 if minimum is None else minimum, tuple(pods), source, fields=fields,
        routed_by=ROUTED_BY if "router" in present and component != "router" else "",
    )  # fmt: skip


def _wname(name: str, component: str, present: list[str]) -> str:
    return name if len(present) == 1 else f"{name}/{component}"


def _default_readiness(container: Mapping[str, Any]) -> dict[str, Any]:
    """deployment_reconciler.go:153-175: a TCP readiness probe on `ome-container`'s first port when it has none."""
    out = dict(container)
    if out.get("name") == MAIN_CONTAINER and not isinstance(out.get("readinessProbe"), dict):
        ports = listed(out.get("ports"))
        port = as_int(ports[0].get("containerPort")) if ports else None
        out["readinessProbe"] = {"tcpSocket": {"port": port or 8080}, "timeoutSeconds": 1, "periodSeconds": 10,
                                 "successThreshold": 1, "failureThreshold": 3}  # fmt: skip
    return out


def hpa(namespace: str, deployment: str, target: str, component: Mapping[str, Any], source: Source) -> Autoscaler:
    minimum = as_int(component.get("minReplicas"))
    low = DEFAULT_MIN_REPLICAS if minimum is None or minimum < DEFAULT_MIN_REPLICAS else minimum
    high = max(as_int(component.get("maxReplicas")) or 0, low)
    metric = str(component.get("scaleMetric") or "cpu")
    return Autoscaler(
        kind="hpa", namespace=namespace, name=deployment, target_kind="InferenceService", target_name=target,
        min_replicas=low, max_replicas=high, signals=(f"resource:{metric}",), scale_down_window=None,
        cooldown=None, source=source,
    )  # fmt: skip
