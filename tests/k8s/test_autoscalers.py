"""The autoscalers and workloads as their controllers read them: unset fields read as the documented defaults,
and the HPA that KEDA or AIBrix makes is named after the object the user wrote."""

from __future__ import annotations

from typing import Any

from exporter.k8s import autoscalers, workloads
from exporter.k8s.autoscalers import Autoscaler, ScaledJob, VerticalAutoscaler

NS = "llm"
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"}


def obj(api: str, kind: str, name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": NS, **metadata}, "spec": spec}


def test_an_hpa_with_every_field_unset_reads_the_api_defaults() -> None:
    bare = autoscalers.autoscaler(obj("autoscaling/v2", "HorizontalPodAutoscaler", "vllm",
                                      {"scaleTargetRef": TARGET, "maxReplicas": 4}))  # fmt: skip
    assert bare == Autoscaler("hpa", NS, "vllm", "Deployment", "vllm", 1, 4, ("resource:cpu",), None, None)
    assert (bare.scale_down_seconds, bare.lowest_replicas, bare.reported_as) == (300, 1, ("hpa", "vllm"))


def test_an_hpa_whose_scale_down_is_disabled() -> None:
    spec = {"scaleTargetRef": TARGET, "maxReplicas": 4, "behavior": {"scaleDown": {"selectPolicy": "Disabled"}}}
    a = autoscalers.autoscaler(obj("autoscaling/v2", "HorizontalPodAutoscaler", "vllm", spec))
    assert a is not None and a.scale_down_disabled and a.scale_down_window is None


def test_a_scaled_object_with_every_field_unset_reads_keda_defaults() -> None:
    """keda.sh/docs reference/scaledobject-spec: kind Deployment, min 0, max 100, cooldown 300 s, polling 30 s."""
    so = autoscalers.autoscaler(obj("keda.sh/v1alpha1", "ScaledObject", "chat", {"scaleTargetRef": {"name": "vllm"}}))
    assert so == Autoscaler("keda", NS, "chat", "Deployment", "vllm", 0, 100, (), None, None)
    assert (so.cooldown_seconds, so.scale_down_seconds, autoscalers.default("keda", "pollingInterval")) == (
        300,
        300,
        30,
    )


def test_idle_replica_count_is_the_lowest_count() -> None:
    spec = {"scaleTargetRef": {"name": "vllm"}, "minReplicaCount": 2, "idleReplicaCount": 0, "pollingInterval": 15}
    so = autoscalers.autoscaler(obj("keda.sh/v1alpha1", "ScaledObject", "chat", spec))
    assert so is not None and (so.min_replicas, so.lowest_replicas, so.polling_interval) == (2, 0, 15)


def test_the_hpas_keda_and_aibrix_make_are_their_owners() -> None:
    """KEDA: controllers/keda/hpa.go (keda-hpa-<ScaledObject>); AIBrix: pkg/controller/podautoscaler/
    hpa_resources.go (<PodAutoscaler>-hpa); each with its owner as controller."""
    for api, kind, owner, name, reported in [
        ("keda.sh/v1alpha1", "ScaledObject", "chat", "keda-hpa-chat", ("keda", "chat")),
        ("autoscaling.aibrix.ai/v1alpha1", "PodAutoscaler", "chat", "chat-hpa", ("aibrix", "chat")),
        ("keda.sh/v1alpha1", "ScaledJob", "chat", "chat-hpa", ("hpa", "chat-hpa")),  # not an owner of HPAs
    ]:
        ref = {"apiVersion": api, "kind": kind, "name": owner, "uid": "u", "controller": True}
        made = obj("autoscaling/v2", "HorizontalPodAutoscaler", name, {"scaleTargetRef": TARGET, "maxReplicas": 4},
                   ownerReferences=[ref])  # fmt: skip
        a = autoscalers.hpa(made)
        assert (a.kind, a.name, a.reported_as) == ("hpa", name, reported)


def test_an_aibrix_pod_autoscaler_defaults() -> None:
    spec = {"scaleTargetRef": TARGET, "scalingStrategy": "KPA", "maxReplicas": 0}  # 0: no upper limit
    pa = autoscalers.autoscaler(obj("autoscaling.aibrix.ai/v1alpha1", "PodAutoscaler", "chat", spec))
    assert pa == Autoscaler("aibrix", NS, "chat", "Deployment", "vllm", 1, None, (), None, None)


def test_a_scaled_job_and_a_vpa() -> None:
    job = autoscalers.scaled_job(obj("keda.sh/v1alpha1", "ScaledJob", "batch",
                                     {"triggers": [{"type": "prometheus", "metadata": {"query": "q"}}]}))  # fmt: skip
    assert job == ScaledJob(NS, "batch", 0, 100, 30, ("prometheus:q",))
    vpa = autoscalers.vpa(obj("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "vllm", {"targetRef": TARGET}))
    assert vpa == VerticalAutoscaler(NS, "vllm", "Deployment", "vllm", "Auto") and vpa.evicts
    off = autoscalers.vpa(
        obj(
            "autoscaling.k8s.io/v1",
            "VerticalPodAutoscaler",
            "v",
            {"targetRef": TARGET, "updatePolicy": {"updateMode": "Off"}},
        )
    )
    assert off is not None and not off.evicts


def test_every_default_cites_where_it_is_documented() -> None:
    for table in (autoscalers.DEFAULTS, workloads.DEFAULTS):
        for key, (_, cited) in table.items():
            assert "http" in cited or ".go" in cited, key


def test_workload_defaults() -> None:
    w = workloads.workload(obj("apps/v1", "StatefulSet", "vllm", {"template": {"spec": {"containers": [
        {"name": "vllm", "readinessProbe": {"httpGet": {"path": "/health"}}}]}}}))  # fmt: skip
    assert w is not None and (w.replicas, w.declared_replicas, w.pod.grace_period) == (None, 1, None)
    probe = w.pod.containers[0].readiness
    assert probe is not None and (probe.period, probe.failure_threshold, probe.budget_seconds) == (10, 3, 30)
