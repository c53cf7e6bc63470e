"""KubeRay `RayService` (ray.io/v1) serving vLLM through Ray Serve LLM, as the Ray pods KubeRay v1.7.0 makes
and the Ray Serve deployments its `serveConfigV2` describes.

An application of `serveConfigV2` (a YAML string) whose `import_path` is in `ray.serve.llm` serves each of
its `args.llm_configs` (or `args.llm_config`) as one Ray Serve deployment of vLLM replicas; each is one
workload here, on the Ray container of the worker group that requests GPUs (the head's when no worker group
does). The engine's arguments are the config's `engine_kwargs` (Ray Serve LLM passes them to vLLM's engine
arguments), read as vLLM flags (`max_model_len: 1024` as `--max-model-len=1024`).

Cited from github.com/ray-project/kuberay at tag v1.7.0 (59d663aeec13760646da3db9c1cf8cfe883e30b7):

- ray-operator/controllers/ray/common/pod.go:732-829 `initLivenessAndReadinessProbe`, applied by `BuildPod`
  (:922-929) to the Ray container (the first, utils/constant.go:51) unless the operator runs with
  `ENABLE_PROBES_INJECTION=false`, and only where the template sets none: readiness after 10 s every 5 s,
  10 failures (a RayService worker's: 1 failure, and it also asks Ray Serve's proxy `-/healthz` on the
  `serve` port), liveness after 30 s every 5 s, 120 failures (constant.go:306-322); an HTTP `/api/healthz`
  check for Ray 2.53.0 and later, a `wget` command before (pod.go:721-730); no startup probe;
- pod.go:855-861: a `/dev/shm` emptyDir in memory (`shared-mem`, sized by the container's memory) unless
  `rayStartParams` sets `plasma-directory`; no audit check reads it;
- no preStop hook and no terminationGracePeriodSeconds are set anywhere in ray-operator/controllers (the
  API's 30 s), so both are the template's own;
- pods are labelled `ray.io/node-type` and `ray.io/group` (constant.go:20-21), and a RayService's workers
  `ray.io/serve: "true"` (pod.go:838-846).

And from github.com/ray-project/ray (python/ray/serve/config.py `AutoscalingConfig`, _private/constants.py):
`autoscaling_config` scales on ongoing requests per replica (`target_ongoing_requests`), `min_replicas` 1,
`max_replicas` 1 and `downscale_delay_s` 600 by default (`num_replicas: auto` autoscales with defaults of its
own: read with these, its maximum unknown); without it a deployment runs `num_replicas` (1 by default,
doc/source/serve/configure-serve-deployment.md); requests are routed by
`PowerOfTwoChoicesRequestRouter` (`DEFAULT_REQUEST_ROUTER_PATH`), which sends each to the less loaded of
two replicas, not through the Kubernetes Service.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import yaml

from exporter import hostile
from exporter.k8s import accelerators
from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.fields import Source, as_dict, as_int, as_list, meta
from exporter.k8s.operators.base import Derived, Refs, listed
from exporter.k8s.workloads import Container, PodTemplate, Probe, Workload, container, pod_template

RELEASE = "KubeRay v1.7.0"
LLM_IMPORT = "ray.serve.llm:"
SERVE_PORT = 8000  # utils/constant.go:110 DefaultServingPort
HTTP_HEALTH_FROM = (2, 53, 0)  # pod.go:721-730 supportsUnifiedHealthCheck
WORKER_READINESS = Probe(10, 5, 1, "exec")  # the serve proxy's health joins the raylet's
HEAD_READINESS = Probe(10, 5, 10, "exec")
LIVENESS = Probe(30, 5, 120, "exec")
SERVE_MIN_REPLICAS = 1  # python/ray/serve/config.py AutoscalingConfig.min_replicas
SERVE_MAX_REPLICAS = 1  # AutoscalingConfig.max_replicas
SERVE_DOWNSCALE_DELAY_SECONDS = 600  # AutoscalingConfig.downscale_delay_s
SERVE_NUM_REPLICAS = 1  # the deployment default (configure-serve-deployment.md)
ROUTED_BY = "Ray Serve's router (PowerOfTwoChoicesRequestRouter: the less loaded of two replicas)"


def _version(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split(".")[:3] if p.isdigit()]
    return tuple(parts)


def _flag(key: str, value: Any) -> str | None:
    """An engine keyword as the vLLM flag it sets; None for a structured value (a dict or a list)."""
    if isinstance(value, (dict, list)) or value is None:
        return None
    flag = "--" + str(key).replace("_", "-")
    if isinstance(value, bool):
        return flag if value else f"--no-{flag[2:]}"
    return f"{flag}={value}"


def llm_configs(serve: Mapping[str, Any]) -> tuple[list[tuple[str, str, dict[str, Any]]], list[str]]:
    """(where in serveConfigV2, model id, llm config) of every Ray Serve LLM application's configs, and what
    cannot be read."""
    found: list[tuple[str, str, dict[str, Any]]] = []
    odd: list[str] = []
    for app in listed(serve.get("applications")):
        if not str(app.get("import_path") or "").startswith(LLM_IMPORT):
            continue
        name = str(app.get("name") or "")
        args = as_dict(app.get("args"))
        key = "llm_config" if "llm_config" in args and "llm_configs" not in args else "llm_configs"
        configs = [args[key]] if key == "llm_config" else as_list(args.get(key))
        for i, config in enumerate(configs):
            at = f"applications[{name}].args.{key}" + ("" if key == "llm_config" else f"[{i}]")
            if isinstance(config, dict):
                model = str(as_dict(config.get("model_loading_config")).get("model_id") or i)
                found.append((at, model, config))
            else:  # a path to a YAML file in the image, or a typo
                odd.append(f"spec.serveConfigV2 {at} is {type(config).__name__}, not a mapping: not read")
    return found, odd


def groups(cluster: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(where in the RayService, group name, group spec): the worker groups asking for accelerators, then
    the head, then the other worker groups."""
    head = as_dict(cluster.get("headGroupSpec"))
    workers = [(f"workerGroupSpecs[{g.get('groupName', i)}]", str(g.get("groupName") or ""), g)
               for i, g in enumerate(listed(cluster.get("workerGroupSpecs")))]  # fmt: skip
    gpu = [w for w in workers if _gpus(w[2])]
    return [*gpu, ("headGroupSpec", "head", head), *[w for w in workers if not _gpus(w[2])]]


def _gpus(group: Mapping[str, Any]) -> bool:
    containers = listed(as_dict(as_dict(group.get("template")).get("spec")).get("containers"))
    return bool(containers and accelerators.requested(as_dict(containers[0].get("resources"))))


def ray_pod(
    where: str, group_name: str, group: Mapping[str, Any], http: bool, engine_args: tuple[str, ...] | None
) -> PodTemplate:
    """The pod KubeRay makes for a group: its Ray container with the probes KubeRay adds where unset, and
    (for the engine's group) the engine's arguments."""
    template = as_dict(group.get("template"))
    pod = pod_template(template)
    raw = listed(as_dict(template.get("spec")).get("containers"))
    if not raw:
        return pod
    worker = where != "headGroupSpec"
    ray: Container = container(raw[0])
    check = "httpGet" if http else "exec"
    readiness = WORKER_READINESS if worker else replace(HEAD_READINESS, kind=check)
    ray = replace(ray, readiness=ray.readiness or readiness, liveness=ray.liveness or replace(LIVENESS, kind=check))
    if engine_args is not None:
        ray = replace(ray, args=engine_args, engine="vllm")
    labels = {**pod.labels, "ray.io/node-type": "worker" if worker else "head", "ray.io/group": group_name}
    if worker:
        labels["ray.io/serve"] = "true"
    return replace(pod, labels=labels, containers=(ray, *pod.containers[1:]))


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _fields(where: str, ray_container: str, config: str) -> dict[str, str]:
    pod = f"spec.rayClusterConfig.{where}.template.spec"
    c = f"{pod}.containers[{ray_container}]"
    deployment = f"{config}.deployment_config"
    return {
        "replicas": f"{deployment}.num_replicas (or autoscaling_config)",
        "autoscaler": f"{deployment}.autoscaling_config",
        "readinessProbe": f"{c}.readinessProbe",
        "startupProbe": f"{c}.startupProbe",
        "terminationGracePeriodSeconds": f"{pod}.terminationGracePeriodSeconds",
        "preStop": f"{c}.lifecycle.preStop",
        "tolerations": f"{pod}.tolerations",
        "args": f"{config}.engine_kwargs (e.g. max_model_len)",
        "release": RELEASE,
    }


def serve_config(spec: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The parsed `serveConfigV2`, or why it cannot be read."""
    text = spec.get("serveConfigV2")
    if not isinstance(text, str) or not text.strip():
        return {}, "no spec.serveConfigV2 (a YAML string of Ray Serve applications)"
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return {}, f"spec.serveConfigV2 is not YAML: {str(exc).splitlines()[0]}"
    except hostile.BUILD_ERRORS as exc:
        return {}, f"spec.serveConfigV2 is not YAML: {hostile.why(exc)}"
    if not isinstance(parsed, dict):
        return {}, "spec.serveConfigV2 is not a mapping of Ray Serve settings"
    return parsed, ""


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, name, labels, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    serve, why = serve_config(spec)
    if why:
        return Derived(note=why)
    configs, odd = llm_configs(serve)
    if not configs:
        extra = f" ({'; '.join(odd)})" if odd else ""
        return Derived(note=f"no Ray Serve LLM application (import_path {LLM_IMPORT}…) in spec.serveConfigV2{extra}")
    cluster = as_dict(spec.get("rayClusterConfig"))
    http = _version(str(cluster.get("rayVersion") or "")) >= HTTP_HEALTH_FROM
    found = groups(cluster)
    where, group_name, engine_group = found[0]
    raw = listed(as_dict(as_dict(engine_group.get("template")).get("spec")).get("containers"))
    if not raw:
        return Derived(note=f"spec.rayClusterConfig.{where}.template has no container")
    others = tuple(ray_pod(w, n, g, http, None) for w, n, g in found[1:])
    workloads, scalers = [], []
    for at, model, config in configs:
        wname = name if len(configs) == 1 else f"{name}/{model}"
        kwargs = as_dict(config.get("engine_kwargs"))
        args = tuple(f for f in (_flag(k, v) for k, v in kwargs.items()) if f)
        pods = (ray_pod(where, group_name, engine_group, http, args), *others)
        deployment = as_dict(config.get("deployment_config"))
        odd += _odd(config, deployment, f"spec.serveConfigV2 {at}")
        scaling = deployment.get("autoscaling_config")
        replicas = as_int(deployment.get("num_replicas"))
        if deployment.get("num_replicas") == "auto" and not isinstance(scaling, dict):
            scaling = {"max_replicas": None}  # Ray Serve's own autoscaling defaults; the maximum is not read
        if isinstance(scaling, dict):
            scaler = autoscaler(namespace, name, wname, model, scaling, source)
            scalers.append(scaler)
            replicas = scaler.min_replicas
        workloads.append(
            Workload(
                "RayService",
                namespace,
                wname,
                labels,
                annotations,
                SERVE_NUM_REPLICAS if replicas is None else replicas,
                pods,
                source,
                fields=_fields(where, str(raw[0].get("name") or "0"), f"spec.serveConfigV2 {at}"),
                routed_by=ROUTED_BY,
            )
        )
    note = "; ".join(odd)
    return Derived(tuple(workloads), tuple(scalers), note=note)


def _odd(config: Mapping[str, Any], deployment: Mapping[str, Any], at: str) -> list[str]:
    """What of one llm config cannot be read, each read as unset."""
    odd = [f"{at}.{k} is not a mapping: read as unset" for k in ("engine_kwargs", "deployment_config")
           if config.get(k) is not None and not isinstance(config.get(k), dict)]  # fmt: skip
    scaling = deployment.get("autoscaling_config")
    if scaling is not None and not isinstance(scaling, dict):
        odd.append(f"{at}.deployment_config.autoscaling_config is not a mapping: read as unset")
    count = deployment.get("num_replicas")
    if count is not None and count != "auto" and as_int(count) is None:
        odd.append(f"{at}.deployment_config.num_replicas {count!r} is not a count: read as {SERVE_NUM_REPLICAS}")
    return odd


def autoscaler(
    namespace: str, service: str, target: str, name: str, config: Mapping[str, Any], source: Source
) -> Autoscaler:
    """The Ray Serve autoscaler of one deployment, with Ray Serve's defaults where unset."""
    low = as_int(config.get("min_replicas"))
    high = as_int(config.get("max_replicas"))
    low = SERVE_MIN_REPLICAS if low is None else low
    most = None if "max_replicas" in config and config["max_replicas"] is None else max(high or SERVE_MAX_REPLICAS, low)
    delay = _number(config.get("downscale_delay_s"), SERVE_DOWNSCALE_DELAY_SECONDS)
    return Autoscaler(
        kind="ray-serve", namespace=namespace, name=f"{service}:{name}", target_kind="RayService",
        target_name=target, min_replicas=low, max_replicas=most,
        signals=("ray-serve:target_ongoing_requests",), scale_down_window=int(delay), cooldown=None,
        source=source,
    )  # fmt: skip
