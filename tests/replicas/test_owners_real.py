"""The workload of operator-managed engine pods against a real control plane: a Deployment controlled by an
InferenceService (the ownerReference KServe's raw-deployment reconciler writes) has its pods made by the
controller manager, bound to a kwok GPU node and readied by kwok; the cluster role's replica series name
the InferenceService, the resource the user edits, and its HPA (which targets the Deployment) too.

The CRD is a stand-in with KServe's group, version, kind and plural and an open schema: the exporter reads
no field of the InferenceService, only the ownerReference naming it (the garbage collector of the
controller manager runs here, so the owner must exist, with the uid the reference names)."""

from __future__ import annotations

from typing import Any

from exporter.exposition import render
from tests.kube.objects import engine_deployment
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.replicas.real import replicas_collector

NODE = "owners-gpu"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "inferenceservices.serving.kserve.io"},
    "spec": {
        "group": "serving.kserve.io",
        "scope": "Namespaced",
        "names": {"kind": "InferenceService", "plural": "inferenceservices", "singular": "inferenceservice",
                  "listKind": "InferenceServiceList", "shortNames": ["isvc"]},
        "versions": [{"name": "v1beta1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}  # fmt: skip


def established(cluster: ControlPlane) -> bool:
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/inferenceservices.serving.kserve.io"
    status, body = cluster.request("GET", path)
    conditions = (body or {}).get("status", {}).get("conditions", []) if status == 200 else []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def predictor(ns: str, owner: dict[str, Any]) -> dict[str, Any]:
    obj = engine_deployment(
        ns,
        "llama-predictor",
        replicas=1,
        pod_spec={
            "nodeSelector": {"pool": "owners"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "kserve-container", "image": "vllm/vllm-openai",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    )  # fmt: skip
    meta = owner["metadata"]
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
         "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    return obj


def hpa(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "llama-predictor", "namespace": ns},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama-predictor"},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
        },
    }  # fmt: skip


def series(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{")]


def test_the_replica_series_name_the_inference_service_behind_the_deployment(kube_cluster: ControlPlane) -> None:
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "1"}, labels={"pool": "owners"})
    ns = cluster.namespace("owners")
    cluster.apply(CRD)
    wait_for(lambda: established(cluster), 60, "the InferenceService CRD Established")
    isvc = cluster.apply({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                          "metadata": {"name": "llama", "namespace": ns}, "spec": {}})  # fmt: skip
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(predictor(ns, isvc))
        cluster.apply(hpa(ns))
        ready = f'llm_replica_ready{{namespace="{ns}",workload="llama"}} 1'

        last = [""]

        def counted() -> bool:
            text = last[0] = render(collector.collect())
            return ready in text and any(
                f'namespace="{ns}",workload="llama",autoscaler="llama-predictor"' in line
                for line in series(text, "llm_autoscaler_max_replicas")
            )

        try:
            wait_for(counted, 120, "the replica Ready under the InferenceService, its HPA too")
        except AssertionError:
            print("\n".join(line for line in last[0].splitlines() if ns in line))
            raise
        text = render(collector.collect())
        ours = [line for line in text.splitlines() if f'namespace="{ns}"' in line]
        assert ours and not [line for line in ours if 'workload="llama-predictor"' in line]
        (info,) = [line for line in series(text, "llm_replica_pod_info") if f'namespace="{ns}"' in line]
        assert 'workload="llama"' in info and 'pod="llama-predictor-' in info
        assert f'llm_replica_startup_seconds_count{{namespace="{ns}",workload="llama",phase="starting"}} 1' in text
