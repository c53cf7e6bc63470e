"""NVIDIA NIM Operator `NIMService` (apps.nvidia.com/v1alpha1) as the Deployment, Service, HPA and Ingress
NIM Operator v3.1.2 renders for it (the `standalone` platform, one node per replica).

Cited from github.com/NVIDIA/k8s-nim-operator at tag v3.1.2 (f9e3047e0bf40eea8f195d3b73c83432f75d983a),
api/apps/v1alpha1/nimservice_types.go unless named:

- `GetDeploymentParams` (:1270-1356) and manifests/deployment.yaml: a Deployment named after the NIMService,
  one container `<name>-ctr` running `image.repository:image.tag` with `command`, `args`, `env`, `resources`
  as written, port `api` (`expose.service.port`, `+kubebuilder:default:=8000`, common_types.go:151-156);
  `nodeSelector`, `tolerations` and `affinity` as written, no other toleration; pods labelled `app: <name>`
  (deployment.yaml:24-29), the standard `app.kubernetes.io/*` labels and the NIMService's `labels`, annotated
  with its `annotations` (:520-542);
- :649-728: unless a probe's `enabled` is false, `probe` or the default: liveness `/v1/health/live` after 15 s
  every 10 s × 3, readiness `/v1/health/ready` after 15 s every 10 s × 3, startup `/v1/health/ready` after
  30 s every 10 s × 120 (1230 s);
- :736-747, :891-905: `/dev/shm` is an in-memory emptyDir `dshm` limited by `storage.sharedMemorySizeLimit`
  (no limit when unset); no audit check reads it;
- neither deployment.yaml nor the NIMService has a preStop hook or terminationGracePeriodSeconds (the API's
  30 s); neither is a field of the NIMService;
- :1091-1096: the replicas are `scale.hpa.minReplicas` when `scale.enabled`, else `replicas`; :1698-1722
  and manifests/hpa.yaml: the HPA of the same name takes `scale.hpa`'s minReplicas, maxReplicas, metrics and
  behavior as written (the HPA's own defaults where unset);
- :1557-1599: the Service of the same name selects `app: <name>`; :1602-1613, :1782-1792 and
  common_types.go:414-419: with `expose.ingress.enabled` an Ingress of the same name with
  `expose.ingress.spec`, annotated with `annotations` and `expose.ingress.annotations`.

A NIM picks its backend (TensorRT-LLM, vLLM, SGLang) from the model profile at start-up, so the engine is
read as `nim`, its context limit the `NIM_MAX_MODEL_LEN` of `spec.env` (`exporter.audit.wrappers`).
`multiNode` (a LeaderWorkerSet), the `kserve` platform and `expose.router` are not read: each is named in a
note.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from exporter.k8s import autoscalers, frontends
from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.fields import Source, as_dict, as_int, meta, strs
from exporter.k8s.frontends import Frontend
from exporter.k8s.operators.base import Derived, Refs
from exporter.k8s.workloads import Workload, pod_template

RELEASE = "NIM Operator v3.1.2"
ENGINE = "nim"
PORT = 8000
PROBES: dict[str, dict[str, Any]] = {
    "livenessProbe": {"httpGet": {"path": "/v1/health/live", "port": "api"}, "initialDelaySeconds": 15,
                      "periodSeconds": 10, "failureThreshold": 3},
    "readinessProbe": {"httpGet": {"path": "/v1/health/ready", "port": "api"}, "initialDelaySeconds": 15,
                       "periodSeconds": 10, "failureThreshold": 3},
    "startupProbe": {"httpGet": {"path": "/v1/health/ready", "port": "api"}, "initialDelaySeconds": 30,
                     "periodSeconds": 10, "failureThreshold": 120},
}  # fmt: skip
FIELDS = {
    "replicas": "spec.replicas",
    "autoscaler": "spec.scale (enabled, hpa.minReplicas, maxReplicas, metrics, behavior)",
    "readinessProbe": "spec.readinessProbe.probe",
    "startupProbe": "spec.startupProbe.probe",
    "terminationGracePeriodSeconds": "",
    "preStop": "",
    "tolerations": "spec.tolerations",
    "args": "spec.env (NIM_MAX_MODEL_LEN)",
    "release": RELEASE,
}
_POD_FIELDS = ("nodeSelector", "tolerations", "affinity", "schedulerName", "runtimeClassName")


def standard_labels(name: str) -> dict[str, str]:
    """:291-300 `GetStandardLabels` (less the operator's version, which the input does not say)."""
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/part-of": "nim-service",
        "app.kubernetes.io/managed-by": "k8s-nim-operator",
    }


def _probe(spec: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The probe the operator sets: none when disabled, the NIMService's own, else its default."""
    setting = as_dict(spec.get(name))
    if setting.get("enabled") is False:
        return None
    return as_dict(setting.get("probe")) or PROBES[name]


def _unread(spec: Mapping[str, Any]) -> str:
    if spec.get("multiNode"):
        return "spec.multiNode (a LeaderWorkerSet of several nodes per replica) is not read"
    platform = str(spec.get("inferencePlatform") or "standalone")
    if platform != "standalone":
        return f"spec.inferencePlatform {platform}: only the standalone platform (a Deployment) is read"
    image = as_dict(spec.get("image"))
    if not image.get("repository"):
        return "no spec.image.repository: the NIM's image is unknown"
    return ""


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, name, labels, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    why = _unread(spec)
    if why:
        return Derived(note=why)
    image = as_dict(spec.get("image"))
    expose = as_dict(spec.get("expose"))
    port = as_int(as_dict(expose.get("service")).get("port")) or PORT
    container: dict[str, Any] = {
        "name": f"{name}-ctr",
        "image": f"{image.get('repository')}:{image.get('tag', '')}".rstrip(":"),
        "ports": [{"name": "api", "containerPort": port}],
        **{k: spec[k] for k in ("command", "args", "env", "resources") if k in spec},
    }
    odd = [f"spec.{k} is not a mapping: read as unset" for k in (*PROBES, "scale", "expose", "image")
           if spec.get(k) is not None and not isinstance(spec.get(k), dict)]  # fmt: skip
    for probe in PROBES:
        found = _probe(spec, probe)
        if found is not None:
            container[probe] = found
    pod_labels = {"app": name, **standard_labels(name), **strs(spec.get("labels"))}
    template = {
        "metadata": {"labels": pod_labels, "annotations": strs(spec.get("annotations"))},
        "spec": {**{k: spec[k] for k in _POD_FIELDS if k in spec}, "containers": [container]},
    }
    pod = pod_template(template)
    pod = replace(pod, containers=tuple(replace(c, engine=ENGINE) for c in pod.containers))
    scale = as_dict(spec.get("scale"))
    scaled = scale.get("enabled") is True
    hpa_spec = as_dict(scale.get("hpa"))
    replicas = as_int(hpa_spec.get("minReplicas") if scaled else spec.get("replicas"))
    fields = {**FIELDS, "replicas": "spec.scale.hpa.minReplicas" if scaled else "spec.replicas"}
    workload = Workload(
        "NIMService", namespace, name, labels, annotations, 1 if replicas is None else replicas, (pod,), source,
        fields=fields,
    )  # fmt: skip
    scalers = (hpa(namespace, name, hpa_spec, source),) if scaled else ()
    ingress = _ingress(namespace, name, strs(spec.get("annotations")), as_dict(expose.get("ingress")))
    if as_dict(expose.get("router")):
        odd.append("spec.expose.router is not read: add the Ingress or HTTPRoute it makes to the input")
    service = ((namespace, name, {"app": name}),)
    return Derived((workload,), scalers, service, note="; ".join(odd), frontends=ingress)


def hpa(namespace: str, name: str, spec: Mapping[str, Any], source: Source) -> Autoscaler:
    """The HPA the operator renders from `scale.hpa`, read by the HPA reader, aimed at the NIMService."""
    body = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        **{k: spec[k] for k in ("minReplicas", "maxReplicas", "metrics", "behavior") if k in spec},
    }
    obj = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }
    return replace(autoscalers.hpa(obj, namespace, source), target_kind="NIMService")


def _ingress(
    namespace: str, name: str, annotations: Mapping[str, str], ingress: Mapping[str, Any]
) -> tuple[Frontend, ...]:
    if ingress.get("enabled") is not True:
        return ()
    obj = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {**annotations, **strs(ingress.get("annotations"))}},
        "spec": as_dict(ingress.get("spec")),
    }  # fmt: skip
    found = frontends.frontend(obj, namespace)
    return () if found is None else (found,)
