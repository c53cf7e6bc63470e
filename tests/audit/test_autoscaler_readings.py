"""The audit reads autoscalers as the cluster role does (`exporter.k8s.autoscalers`): the HPA KEDA or AIBrix
makes is its owner, idleReplicaCount scales to zero, a disabled scale-down waits for nothing, and KEDA's
unset maximum is its default 100."""

from __future__ import annotations

from typing import Any

from exporter.audit import inventory
from exporter.audit.base import Measured
from exporter.audit.model import autoscalers_of, max_replicas
from exporter.audit.run import audit_workload, engines
from exporter.replicas.autoscalers import autoscaler_record
from tests.audit import objects as o
from tests.audit.test_checks import _replace, healthy


def outcomes(objs: list[o.Obj]) -> dict[str, tuple[str, str]]:
    inv = inventory.build(objs)
    (w,) = engines(inv.workloads)
    return {f.check.id: (f.outcome.status, f.outcome.detail) for f in audit_workload(w, inv.around, Measured())}


def made_hpa(name: str, owner: dict[str, Any]) -> o.Obj:
    """The HPA a ScaledObject's or PodAutoscaler's controller makes: owned by it, as the API server lists it."""
    hpa = o.hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 600}})
    hpa["metadata"] = {
        "name": name,
        "namespace": "inference",
        "ownerReferences": [{**owner, "uid": "u", "controller": True}],
    }
    return hpa


KEDA_OWNER = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": "vllm"}
AIBRIX_OWNER = {"apiVersion": "autoscaling.aibrix.ai/v1alpha1", "kind": "PodAutoscaler", "name": "vllm"}


def pod_autoscaler() -> o.Obj:
    spec = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"},
        "minReplicas": 2, "maxReplicas": 6, "scalingStrategy": "HPA",
        "metricsSources": [{"metricSourceType": "pod", "protocolType": "http", "path": "/metrics", "port": "8000",
                            "targetMetric": "vllm:num_requests_waiting", "targetValue": "4"}],
    }  # fmt: skip
    return {"apiVersion": "autoscaling.aibrix.ai/v1alpha1", "kind": "PodAutoscaler",
            "metadata": {"name": "vllm", "namespace": "inference"}, "spec": spec}  # fmt: skip


def test_the_hpa_keda_made_is_the_scaled_object_also_where_the_scaled_object_is_not_in_view() -> None:
    """A cluster whose ScaledObjects are not granted: the cluster role reports `keda vllm`, and so does the audit
    (it said `hpa keda-hpa-vllm`)."""
    hpa = made_hpa("keda-hpa-vllm", KEDA_OWNER)
    record = autoscaler_record(hpa)
    assert record is not None and (record.kind, record.name) == ("keda", "vllm")
    found = outcomes(_replace(healthy(), "ScaledObject", hpa))
    assert found["fixed-replicas"] == ("pass", "scaled by keda vllm")
    # with the ScaledObject in view, the one autoscaler is the ScaledObject
    assert outcomes([*healthy(), hpa])["fixed-replicas"] == ("pass", "scaled by keda vllm")


def test_the_hpa_aibrix_made_is_the_pod_autoscaler() -> None:
    """AIBrix's HPA strategy scales through `<PodAutoscaler>-hpa`: one autoscaler, `aibrix vllm`, on both sides
    (the cluster role said `hpa vllm-hpa`; the audit counted both)."""
    hpa = made_hpa("vllm-hpa", AIBRIX_OWNER)
    record = autoscaler_record(hpa)
    assert record is not None and (record.kind, record.name) == ("aibrix", "vllm")
    found = outcomes([*_replace(healthy(), "ScaledObject", pod_autoscaler()), hpa])
    assert found["fixed-replicas"] == ("pass", "scaled by aibrix vllm")
    assert found["autoscaler-scale-to-zero"] == ("pass", "minimum 2")


def test_an_idle_replica_count_of_zero_scales_to_zero() -> None:
    so = o.scaledobject(minReplicaCount=2, idleReplicaCount=0, cooldownPeriod=900)
    assert outcomes(_replace(healthy(), "ScaledObject", so))["autoscaler-scale-to-zero"] == (
        "fail",
        "keda vllm: idleReplicaCount 0 (minimum 2 while a trigger is active)",
    )
    # ... and then the cooldown applies: KEDA's default 300 s is shorter than a cold start
    short = o.scaledobject(minReplicaCount=2, idleReplicaCount=0)
    status, detail = outcomes(_replace(healthy(), "ScaledObject", short))["autoscaler-cooldown-short"]
    assert (status, detail.endswith("keda vllm: cooldownPeriod (default) 300 s")) == ("fail", True)


def test_a_disabled_scale_down_waits_for_nothing() -> None:
    queue = [{"type": "External", "external": {"metric": {"name": "llm_requests_waiting"},
                                               "target": {"type": "AverageValue", "averageValue": "4"}}}]  # fmt: skip
    hpa = o.hpa(metrics=queue, behavior={"scaleDown": {"selectPolicy": "Disabled"}})
    assert outcomes(_replace(healthy(), "ScaledObject", hpa))["autoscaler-cooldown-short"] == (
        "pass",
        "scale-down is disabled (selectPolicy: Disabled)",
    )


def test_keda_unset_maximum_is_its_default() -> None:
    """The HPA KEDA makes for a ScaledObject without maxReplicaCount has maxReplicas 100: so does the audit."""
    so = o.scaledobject()
    del so["spec"]["maxReplicaCount"]
    inv = inventory.build([o.engine(), so])
    (w,) = inv.workloads
    assert max_replicas(w, autoscalers_of(w, inv.around)) == 100
