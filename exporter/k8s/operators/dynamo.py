"""NVIDIA Dynamo `DynamoGraphDeployment` (nvidia.com/v1alpha1) as the pods the Dynamo operator runs for each
of its `spec.services`: one workload per service, named `<graph>/<service>`, on the fields of that service.

Cited from github.com/ai-dynamo/dynamo, deploy/cloud/operator (each file at the commit named):

- internal/dynamo/graph.go (010c68fa39cf2e0820721849c47b19a5b4f0e393) `GenerateDynamoComponentsDeployments`:
  each service becomes a DynamoComponentDeployment `<graph>-<service, lower-cased>` with the service's
  spec and `replicas` (unset: the Deployment's default of 1), its pods selected by `nvidia.com/selector`
  of that name (`GenerateComponentService`; internal/consts `KubeLabelDynamoSelector`);
- internal/dynamo/graph.go `GenerateBasePodSpec` (as stored at the version whose `GetBaseContainer` takes a
  `ComponentContext`): the component type's base container, then `extraPodSpec.mainContainer` merged over
  it (`mergo.WithOverride`: what it sets wins; a `startupProbe` there replaces the default), then the
  service's own `livenessProbe`/`readinessProbe` replace the defaults whole; `extraPodSpec`'s pod fields
  are merged over the base pod spec; `resources.limits.gpu` is the container's `nvidia.com/gpu`;
- internal/dynamo/component_common.go (47b4f3666e6faa0e766aed465867cd3e0d1c81ad) `getCommonPodSpec`:
  terminationGracePeriodSeconds 60; container `main`, command `/bin/sh -c`; no preStop hook anywhere;
- internal/dynamo/component_worker.go (0284ad8648d328adb8b00be2cf6eac3c20736675): a worker's readiness
  `/health` on the system port every 10 s, 3 failures; liveness `/live` every 5 s, 1 failure; startup
  `/live` every 10 s, 720 failures (7200 s);
- internal/dynamo/component_frontend.go (57f8cbc8e5883cd4dcfafa008d3d888e12788666): the frontend runs
  `python3 -m dynamo.frontend` on port 8000, readiness `/health` after 10 s every 10 s, 3 failures.

Not read, each named in a note: `multinode` services (a LeaderWorkerSet or Grove gang per replica),
`autoscaling`, and a graph with a `planner` component (the Planner sets the workers' replicas at run time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.fields import Source, as_dict, as_int, meta, strs
from exporter.k8s.operators.base import Derived, Refs
from exporter.k8s.workloads import Workload, pod_template

RELEASE = "Dynamo operator (deploy/cloud/operator, commits cited in exporter/k8s/operators/dynamo.py)"
SELECTOR = "nvidia.com/selector"
COMPONENT = "nvidia.com/dynamo-component"
GRACE_PERIOD_SECONDS = 60
SYSTEM_PORT = 9090
FRONTEND_PORT = 8000


def _http(path: str, port: str, initial: int, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": port},
        "initialDelaySeconds": initial,
        "periodSeconds": period,
        "failureThreshold": failures,
    }


BASE = {"name": "main", "command": ["/bin/sh", "-c"]}
DEFAULTS: dict[str, dict[str, Any]] = {  # componentType -> its base container
    "worker": {
        **BASE,
        "ports": [{"name": "system", "containerPort": SYSTEM_PORT}],
        "readinessProbe": _http("/health", "system", 0, 10, 3),
        "livenessProbe": _http("/live", "system", 0, 5, 1),
        "startupProbe": _http("/live", "system", 0, 10, 720),
    },
    "frontend": {
        **BASE,
        "command": ["python3"],
        "args": ["-m", "dynamo.frontend"],
        "ports": [{"name": "http", "containerPort": FRONTEND_PORT}],
        "readinessProbe": _http("/health", "http", 10, 10, 3),
        "livenessProbe": _http("/live", "http", 15, 10, 3),
    },
}
WORKER_TYPES = ("worker", "prefill", "decode")


def _fields(service: str) -> dict[str, str]:
    at = f"spec.services.{service}"
    main = f"{at}.extraPodSpec.mainContainer"
    return {
        "replicas": f"{at}.replicas",
        "autoscaler": f"{at}.autoscaling",
        "readinessProbe": f"{at}.readinessProbe",
        "startupProbe": f"{main}.startupProbe",
        "terminationGracePeriodSeconds": f"{at}.extraPodSpec.terminationGracePeriodSeconds",
        "preStop": f"{main}.lifecycle.preStop",
        "tolerations": f"{at}.extraPodSpec.tolerations",
        "args": f"{main}.args",
        "release": RELEASE,
    }


def _resources(resources: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Dynamo's `resources` (cpu, memory, gpu, custom per section) as a container's."""
    out: dict[str, dict[str, Any]] = {}
    for section in ("requests", "limits"):
        given = as_dict(resources.get(section))
        values = {**as_dict(given.get("custom"))}
        for key, name in (("cpu", "cpu"), ("memory", "memory"), ("gpu", "nvidia.com/gpu")):
            if given.get(key) not in (None, ""):
                values[name] = given[key]
        if values:
            out[section] = values
    return out


def service_pod(graph: str, service: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template Dynamo's operator generates for one service of a graph."""
    kind = str(spec.get("componentType") or "")
    container = dict(DEFAULTS.get("worker" if kind in WORKER_TYPES else kind, BASE))
    extra = as_dict(spec.get("extraPodSpec"))
    main = as_dict(extra.get("mainContainer"))
    container.update({k: v for k, v in main.items() if v not in (None, "", [], {})})
    for probe in ("livenessProbe", "readinessProbe"):
        if isinstance(spec.get(probe), dict):
            container[probe] = spec[probe]
    resources = _resources(as_dict(spec.get("resources")))
    if resources:
        container["resources"] = resources
    pod_spec = {"terminationGracePeriodSeconds": GRACE_PERIOD_SECONDS}
    pod_spec.update({k: v for k, v in extra.items() if k != "mainContainer" and v not in (None, "", [], {})})
    labels = {**strs(as_dict(spec.get("labels"))), SELECTOR: f"{graph}-{service.lower()}", COMPONENT: service}
    return {"metadata": {"labels": labels}, "spec": {**pod_spec, "containers": [container]}}


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, name, labels, annotations = meta(obj, default_namespace)
    raw = as_dict(obj.get("spec")).get("services")
    services = as_dict(raw)
    if not services:
        odd = raw is not None and not isinstance(raw, dict)
        why = "spec.services is not a mapping: nothing read" if odd else "no spec.services: nothing to run"
        return Derived(note=why)
    notes: list[str] = []
    kinds = {str(as_dict(s).get("componentType") or "") for s in services.values()}
    if "planner" in kinds:
        notes.append("a planner service sets the workers' replicas at run time: spec.services.*.replicas is the start")
    workloads = []
    for service, raw in services.items():
        spec = as_dict(raw)
        if not isinstance(raw, dict):
            notes.append(f"spec.services.{service} is not a mapping: not read")
            continue
        if spec.get("multinode"):
            notes.append(f"spec.services.{service}.multinode is not read (a LeaderWorkerSet or Grove gang per replica)")
            continue
        if as_dict(spec.get("autoscaling")).get("enabled") is True:
            notes.append(f"spec.services.{service}.autoscaling is not read")
        replicas = as_int(spec.get("replicas"))
        pod = pod_template(service_pod(name, service, spec))
        workload = Workload(
            "DynamoGraphDeployment", namespace, f"{name}/{service}", labels, annotations,
            1 if replicas is None else replicas, (pod,), source, fields=_fields(service),
        )  # fmt: skip
        workloads.append(workload)
    return Derived(tuple(workloads), note="; ".join(notes))
