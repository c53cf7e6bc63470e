"""Kubernetes objects as manifests write them, for the audit's tests (every field one a real manifest has)."""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]


def engine(
    name: str = "vllm",
    namespace: str = "inference",
    *,
    replicas: int | None = 2,
    image: str = "vllm/vllm-openai:v0.10.0",
    args: tuple[str, ...] = ("--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "8192"),
    gpus: int = 1,
    kind: str = "Deployment",
    **pod: Any,
) -> Obj:
    """An engine Deployment that passes every check of its own (probes, grace, preStop, toleration)."""
    container: Obj = {
        "name": "vllm",
        "image": image,
        "args": list(args),
        "ports": [{"name": "http", "containerPort": 8000}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10, "failureThreshold": 3},
        "startupProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10, "failureThreshold": 90},
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", "10"]}}},
    }
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec: Obj = {
        "terminationGracePeriodSeconds": 600,
        "containers": [container],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    spec.update(pod)
    obj: Obj = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }
    if replicas is not None:
        obj["spec"]["replicas"] = replicas
    return obj


def container_of(obj: Obj) -> Obj:
    return obj["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def changed(obj: Obj, **container: Any) -> Obj:
    """A copy of `obj` whose engine container has these fields (None: removed)."""
    out = copy.deepcopy(obj)
    c = container_of(out)
    for key, value in container.items():
        if value is None:
            c.pop(key, None)
        else:
            c[key] = value
    return out


def scaledobject(target: str = "vllm", namespace: str = "inference", **spec: Any) -> Obj:
    body: Obj = {
        "scaleTargetRef": {"name": target},
        "minReplicaCount": 2,
        "maxReplicaCount": 8,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}},
        "triggers": [
            {
                "type": "prometheus",
                "metadata": {
                    "serverAddress": "http://prometheus:9090",
                    "query": 'sum(llm_requests_waiting{namespace="inference"})',
                    "threshold": "4",
                    "ignoreNullValues": "false",
                },
            }
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": target, "namespace": namespace},
        "spec": body,
    }


def hpa(target: str = "vllm", namespace: str = "inference", metrics: list[Obj] | None = None, **spec: Any) -> Obj:
    body: Obj = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "minReplicas": 2,
        "maxReplicas": 6,
        "metrics": metrics
        if metrics is not None
        else [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
            }
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": namespace},
        "spec": body,
    }


def pdb(app: str = "vllm", namespace: str = "inference") -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
    }


def service(app: str = "vllm", namespace: str = "inference") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": app, "namespace": namespace},
        "spec": {"selector": {"app": app}, "ports": [{"port": 8000, "targetPort": 8000}]},
    }


def ingress(service_name: str = "vllm", namespace: str = "inference", annotations: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "llm", "namespace": namespace, "annotations": annotations or {}},
        "spec": {
            "ingressClassName": "nginx",
            "rules": [
                {
                    "host": "llm.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": service_name, "port": {"number": 8000}}},
                            }
                        ]
                    },
                }
            ],
        },
    }


def route(service_name: str = "vllm", namespace: str = "inference", timeout: str | None = None) -> Obj:
    annotations = {"haproxy.router.openshift.io/timeout": timeout} if timeout is not None else {}
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "llm", "namespace": namespace, "annotations": annotations},
        "spec": {"to": {"kind": "Service", "name": service_name}, "port": {"targetPort": 8000}},
    }


def inference_pool(app: str = "vllm", namespace: str = "inference") -> Obj:
    return {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": app, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": app}},
            "targetPorts": [{"number": 8000}],
            "endpointPickerRef": {"name": f"{app}-epp", "port": {"number": 9002}},
        },
    }


def node(name: str, gpus: int = 8, taints: list[Obj] | None = None, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {"capacity": {"cpu": "64", "memory": "512Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}},
    }


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
