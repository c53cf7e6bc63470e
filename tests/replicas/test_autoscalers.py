"""Autoscalers of engine workloads from their HPAs: a plain one, and the one KEDA's operator makes."""

from __future__ import annotations

from typing import Any

from exporter.exposition import render
from exporter.replicas.autoscalers import Autoscaler, autoscaler_record, of_engines
from exporter.replicas.collector import autoscaler_families, pod_info
from exporter.replicas.startup import PodStart


def hpa(name: str, target: str, **extra: Any) -> dict[str, Any]:
    """An autoscaling/v2 HPA as the API server returns it, after the HPA controller wrote its status."""
    obj: dict[str, Any] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "llm", "uid": f"uid-{name}"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 2,
            "maxReplicas": 6,
        },
        "status": {
            "currentReplicas": 6,
            "desiredReplicas": 6,
            "conditions": [
                {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"},
                {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"},
                {"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas"},
            ],
        },
    }
    for key, value in extra.items():
        obj[key] |= value
    return obj


def test_a_plain_hpa() -> None:
    assert autoscaler_record(hpa("vllm", "vllm")) == Autoscaler("llm", "vllm", "vllm", "hpa", 2, 6, 6, 6, True)


def test_the_hpa_keda_makes_is_reported_under_its_scaled_object() -> None:
    """Shaped as KEDA's operator builds it (controllers/keda/hpa.go, newHPAForScaledObject): named
    keda-hpa-<ScaledObject>, its labels, the ScaledObject as controller; min 1 for a ScaledObject with
    minReplicaCount 0 (KEDA scales 0 <-> 1 itself)."""
    keda = hpa(
        "keda-hpa-chat",
        "vllm",
        metadata={
            "labels": {
                "app.kubernetes.io/name": "keda-hpa-chat",
                "app.kubernetes.io/part-of": "chat",
                "app.kubernetes.io/managed-by": "keda-operator",
            },
            "ownerReferences": [
                {
                    "apiVersion": "keda.sh/v1alpha1",
                    "kind": "ScaledObject",
                    "name": "chat",
                    "uid": "u",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        spec={"minReplicas": 1, "maxReplicas": 4},
        status={"currentReplicas": 1, "desiredReplicas": 1, "conditions": []},
    )
    assert autoscaler_record(keda) == Autoscaler("llm", "vllm", "chat", "keda", 1, 4, 1, 1, False)


def test_defaults_and_objects_without_a_target() -> None:
    bare = hpa("vllm", "vllm", status={"conditions": None})
    del bare["spec"]["minReplicas"]
    del bare["status"]["currentReplicas"], bare["status"]["desiredReplicas"]
    assert autoscaler_record(bare) == Autoscaler("llm", "vllm", "vllm", "hpa", 1, 6, 0, 0, False)  # API defaults
    assert autoscaler_record({"metadata": {"name": "x"}, "spec": {}}) is None


def test_only_the_autoscalers_of_engine_workloads() -> None:
    ours = Autoscaler("llm", "vllm", "vllm", "hpa", 1, 4, 2, 3, False)
    web = Autoscaler("llm", "web", "web", "hpa", 1, 4, 2, 2, False)
    elsewhere = Autoscaler("other", "vllm", "vllm", "hpa", 1, 4, 2, 2, False)
    assert of_engines([web, elsewhere, ours], {("llm", "vllm")}) == [ours]


def test_exposition() -> None:
    scaler = Autoscaler("llm", "vllm", "chat", "keda", 1, 4, 2, 3, False)
    pods = [PodStart("u1", "llm", "vllm", 0.0, None, None, (), "vllm-7d9f8c6b5d-x2x4q")]
    text = render([pod_info(pods), *autoscaler_families([scaler])])
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    labels = 'namespace="llm",workload="vllm",autoscaler="chat",kind="keda"'
    assert samples == [
        'llm_replica_pod_info{namespace="llm",pod="vllm-7d9f8c6b5d-x2x4q",workload="vllm"} 1',
        f"llm_autoscaler_desired_replicas{{{labels}}} 3",
        f"llm_autoscaler_current_replicas{{{labels}}} 2",
        f"llm_autoscaler_min_replicas{{{labels}}} 1",
        f"llm_autoscaler_max_replicas{{{labels}}} 4",
        f"llm_autoscaler_scaling_limited{{{labels}}} 0",
    ]
