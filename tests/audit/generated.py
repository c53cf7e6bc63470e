"""An operator's resource and the workload its operator generates from it, as a dump of the namespace (or the
live cluster) holds both: a KServe InferenceService in Standard (raw deployment) mode with its own predictor
container, and the Deployment `<name>-predictor` KServe v0.20.0 makes of it, its controller owner the
InferenceService (exporter/k8s/owner_refs.py `OPERATORS`)."""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

# the predictor's container: vLLM on one GPU, without probes or preStop (findings to land on the resource)
CONTAINER: Obj = {
    "name": "kserve-container",
    "image": "vllm/vllm-openai:v0.10.0",
    "args": ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "8192"],
    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
    "resources": {"limits": {"nvidia.com/gpu": "1"}},
}


def inference_service(name: str, namespace: str) -> Obj:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {"serving.kserve.io/deploymentMode": "Standard"}},
        "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 2, "containers": [copy.deepcopy(CONTAINER)]}},
    }  # fmt: skip


def controlled_by(owner: Obj) -> list[Obj]:
    meta = owner["metadata"]
    return [{"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
             "uid": meta.get("uid", "00000000-0000-0000-0000-000000000000"), "controller": True,
             "blockOwnerDeletion": True}]  # fmt: skip


def predictor(isvc: Obj, **pod: Any) -> Obj:
    """The Deployment KServe v0.20.0 makes of `isvc`: `<name>-predictor`, the InferenceService's pod labels
    (`serving.kserve.io/inferenceservice`, `component: predictor`, `app: isvc.<name>-predictor`), its container."""
    name, namespace = isvc["metadata"]["name"], isvc["metadata"]["namespace"]
    labels = {"app": f"isvc.{name}-predictor", "component": "predictor", "serving.kserve.io/inferenceservice": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"{name}-predictor", "namespace": namespace, "labels": dict(labels),
                     "ownerReferences": controlled_by(isvc)},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": f"isvc.{name}-predictor"}},
                 "template": {"metadata": {"labels": labels},
                              "spec": {**pod, "containers": copy.deepcopy(isvc["spec"]["predictor"]["containers"])}}},
    }  # fmt: skip
