"""Autoscalers of engine workloads against a real control plane: the controller manager's HPA controller
scales a Deployment of engine pods up to its minimum, a ScaledObject (the published KEDA CRD) controls an
HPA built as KEDA's operator builds it, and an AIBrix PodAutoscaler (the published CRD) one built as AIBrix's
controller builds it; the collector reports each under the object the user wrote, as the audit does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from exporter.config import Audit, Cluster, Routes
from exporter.engines import parser
from exporter.exposition import render
from tests.collectors import build_engine_pod_collectors
from tests.kube.objects import engine_deployment
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.watchdog.test_watchdog_e2e import install_keda_crds

NODE = "autoscale-gpu"
AIBRIX_CRD = Path(__file__).resolve().parents[1] / "fixtures" / "aibrix" / "autoscaling.aibrix.ai_podautoscalers.yaml"


def hpa(ns: str, name: str, target: str, low: int, high: int, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": ns, **meta},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": low,
            "maxReplicas": high,
        },
    }


def scaled_object(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "chat", "namespace": ns},
        "spec": {
            "scaleTargetRef": {"name": "chat"},
            "minReplicaCount": 0,
            "maxReplicaCount": 4,
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {
                        "serverAddress": "http://prometheus:9090",
                        "query": f'sum(llm_requests_waiting{{namespace="{ns}"}})',
                        "threshold": "4",
                    },
                }
            ],
        },
    }


def pod_autoscaler(ns: str) -> dict[str, Any]:
    """AIBrix's HPA strategy: its controller scales through `rag-hpa` (hpa_resources.go, makeHPAWithBounds)."""
    source = {"metricSourceType": "pod", "protocolType": "http", "path": "/metrics", "port": "8000",
              "targetMetric": "vllm:num_requests_waiting", "targetValue": "4"}  # fmt: skip
    return {
        "apiVersion": "autoscaling.aibrix.ai/v1alpha1",
        "kind": "PodAutoscaler",
        "metadata": {"name": "rag", "namespace": ns},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "rag"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "scalingStrategy": "HPA",
            "metricsSources": [source],
        },
    }


def samples(text: str, name: str, ns: str) -> dict[str, float]:
    """workload/autoscaler/kind -> value of `name` in `ns`."""
    found = parser.parse(text, {name}, "").samples.get(name, [])
    return {
        "/".join(labels[k] for k in ("workload", "autoscaler", "kind")): value
        for labels, value in ((dict(pairs), value) for pairs, value in found)
        if labels["namespace"] == ns
    }


def test_engine_autoscalers_from_a_real_control_plane(kube_cluster: ControlPlane) -> None:
    cluster = kube_cluster
    install_keda_crds(cluster)
    cluster.apply(yaml.safe_load(AIBRIX_CRD.read_text(encoding="utf-8")))
    pa_served = "/apis/autoscaling.aibrix.ai/v1alpha1/podautoscalers"
    wait_for(lambda: cluster.request("GET", pa_served)[0] == 200, 60, "podautoscalers served")
    cluster.add_node(NODE, labels={"pool": "autoscale"})
    ns = cluster.namespace("autoscale")
    (collector,) = build_engine_pod_collectors(
        Cluster(routes=Routes(enabled=False), audit=Audit(enabled=False)), str(cluster.admin_kubeconfig)
    )
    collector.start()
    try:
        wait_for(collector.ready, 60, "the first list of pods")
        on_pool = {"nodeSelector": {"pool": "autoscale"}}
        for name in ("vllm", "chat", "rag"):
            cluster.apply(engine_deployment(ns, name, pod_spec=on_pool))
        cluster.apply(engine_deployment(ns, "web", opted_in=False, pod_spec=on_pool))
        cluster.apply(hpa(ns, "vllm", "vllm", 2, 3))  # the HPA controller scales vllm from 1 up to its minimum
        cluster.apply(hpa(ns, "web", "web", 1, 2))  # not an engine: not reported
        so = cluster.apply(scaled_object(ns))
        owner = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": "chat",
                 "uid": so["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
        labels = {"app.kubernetes.io/name": "keda-hpa-chat", "app.kubernetes.io/part-of": "chat",
                  "app.kubernetes.io/managed-by": "keda-operator"}  # fmt: skip
        cluster.apply(hpa(ns, "keda-hpa-chat", "chat", 1, 4, labels=labels, ownerReferences=[owner]))
        pa = cluster.apply(pod_autoscaler(ns))
        pa_owner = {"apiVersion": "autoscaling.aibrix.ai/v1alpha1", "kind": "PodAutoscaler", "name": "rag",
                    "uid": pa["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
        cluster.apply(hpa(ns, "rag-hpa", "rag", 1, 5, ownerReferences=[pa_owner]))

        def scaled() -> bool:
            text = render(collector.collect())
            current = samples(text, "llm_autoscaler_current_replicas", ns)
            return current == {"vllm/vllm/hpa": 2, "chat/chat/keda": 1, "rag/rag/aibrix": 1}

        wait_for(scaled, 120, "the HPA controller's status of the three autoscalers")
        text = render(collector.collect())
        low = {"vllm/vllm/hpa": 2, "chat/chat/keda": 1, "rag/rag/aibrix": 1}
        assert samples(text, "llm_autoscaler_min_replicas", ns) == low
        high = {"vllm/vllm/hpa": 3, "chat/chat/keda": 4, "rag/rag/aibrix": 5}
        assert samples(text, "llm_autoscaler_max_replicas", ns) == high
        desired = samples(text, "llm_autoscaler_desired_replicas", ns)
        assert desired["vllm/vllm/hpa"] == 2  # "Current number of replicas below Spec.MinReplicas"
        # without a metrics API the controller cannot compute chat's; whatever it wrote is what we report
        status = cluster.must("GET", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/keda-hpa-chat")
        assert desired["chat/chat/keda"] == status["status"].get("desiredReplicas", 0)
        pods = cluster.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        engine_pods = {p["metadata"]["name"]: p["metadata"]["labels"]["app"] for p in pods}
        del engine_pods[next(name for name, app in engine_pods.items() if app == "web")]
        infos = [dict(pairs) for pairs, _ in parser.parse(text, {"llm_replica_pod_info"}, "").samples[
            "llm_replica_pod_info"
        ]]  # fmt: skip
        info = {labels["pod"]: labels["workload"] for labels in infos if labels["namespace"] == ns}
        assert info == engine_pods and sorted(info.values()) == ["chat", "rag", "vllm", "vllm"]
    finally:
        collector.close()
        # gone before the test ends: other tests of the shared cluster watch every ScaledObject
        so_path = f"/apis/keda.sh/v1alpha1/namespaces/{ns}/scaledobjects/chat"
        cluster.must("DELETE", so_path, ok=(200, 202, 404))
        wait_for(lambda: cluster.request("GET", so_path)[0] == 404, 60, "the ScaledObject deleted")
        cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))
        cluster.delete_nodes([NODE])
