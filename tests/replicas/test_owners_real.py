"""The workload of operator-managed engine pods against a real control plane: a Deployment controlled by an
InferenceService (the ownerReference KServe's raw-deployment reconciler writes) has its pods made by the
controller manager, bound to a kwok GPU node and readied by kwok; the cluster role's replica series name
the InferenceService, the resource the user edits, and its HPA (which targets the Deployment) too.

The CRDs are the ones KServe v0.20.0, Knative Serving v0.48.1 and KAITO v0.12.0 publish
(tests/fixtures/operator_crds): the exporter reads no field of the operators' resources, only the
ownerReference naming one, or the label a generated controller's workload carries (`THROUGH_LABELS`): the
garbage collector of the controller manager runs here, so each owner must exist, with the uid the reference
names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from exporter.exposition import render
from tests.kube.objects import engine_deployment
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.replicas.real import rendered_when, replicas_collector

NODE = "owners-gpu"
CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "operator_crds"


def crd(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CRDS / name).read_text())
    return loaded


def established(cluster: ControlPlane, name: str = "inferenceservices.serving.kserve.io") -> bool:
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
    status, body = cluster.request("GET", path)
    conditions = ((body or {}).get("status") or {}).get("conditions") or [] if status == 200 else []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def controlled_by(owner: dict[str, Any]) -> list[dict[str, Any]]:
    meta = owner["metadata"]
    return [{"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
             "controller": True, "blockOwnerDeletion": True}]  # fmt: skip


def predictor(ns: str, owner: dict[str, Any], name: str = "llama-predictor") -> dict[str, Any]:
    obj = engine_deployment(
        ns,
        name,
        replicas=1,
        pod_spec={
            "nodeSelector": {"pool": "owners"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "kserve-container", "image": "vllm/vllm-openai",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    )  # fmt: skip
    obj["metadata"]["ownerReferences"] = controlled_by(owner)
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
    cluster.apply(crd("serving.kserve.io_inferenceservices.yaml"))
    wait_for(lambda: established(cluster), 60, "the InferenceService CRD Established")
    isvc = cluster.apply({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                          "metadata": {"name": "llama", "namespace": ns}, "spec": {}})  # fmt: skip
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(predictor(ns, isvc))
        cluster.apply(hpa(ns))
        ready = f'llm_replica_ready{{namespace="{ns}",workload="llama"}} 1'

        rendered_when(
            collector,
            ns,
            lambda text: (
                ready in text
                and any(
                    f'namespace="{ns}",workload="llama",autoscaler="llama-predictor"' in line
                    for line in series(text, "llm_autoscaler_max_replicas")
                )
            ),
            "the replica Ready under the InferenceService, its HPA too",
        )
        text = render(collector.collect())
        ours = [line for line in text.splitlines() if f'namespace="{ns}"' in line]
        assert ours and not [line for line in ours if 'workload="llama-predictor"' in line]
        (info,) = [line for line in series(text, "llm_replica_pod_info") if f'namespace="{ns}"' in line]
        assert 'workload="llama"' in info and 'pod="llama-predictor-' in info
        assert f'llm_replica_startup_seconds_count{{namespace="{ns}",workload="llama",phase="starting"}} 1' in text


# the Revision spec KServe's Knative Service template gives (the predictor's container; Knative's defaults)
REVISION_SPEC = {"containerConcurrency": 0, "timeoutSeconds": 300,
                 "containers": [{"name": "kserve-container", "image": "vllm/vllm-openai"}]}  # fmt: skip


def knative(kind: str, name: str, ns: str, owner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": ns, "ownerReferences": controlled_by(owner), **extra}
    template = {"metadata": {"labels": extra.get("labels", {})}, "spec": REVISION_SPEC}
    spec = REVISION_SPEC if kind == "Revision" else {"template": template}
    return {"apiVersion": "serving.knative.dev/v1", "kind": kind, "metadata": meta, "spec": spec}


def test_knative_mode_names_the_inference_service_at_the_end_of_the_knative_chain(kube_cluster: ControlPlane) -> None:
    """InferenceService -> Knative Service -> Configuration -> Revision -> Deployment, each controlled by the
    one before as KServe and Knative make them; the Deployment carries the Revision's labels."""
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "1"}, labels={"pool": "owners"})
    ns = cluster.namespace("knative")
    names = {"serving.kserve.io_inferenceservices.yaml": "inferenceservices.serving.kserve.io"}
    names.update({f"serving.knative.dev_{k}.yaml": f"{k}s.serving.knative.dev" for k in
                  ("service", "configuration", "revision")})  # fmt: skip
    for file in names:
        cluster.apply(crd(file))
    for name in names.values():
        wait_for(lambda n=name: established(cluster, n), 60, f"the CRD {name} Established")  # type: ignore[misc]
    isvc = cluster.apply({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                          "metadata": {"name": "qwen", "namespace": ns}, "spec": {}})  # fmt: skip
    labels = {"serving.kserve.io/inferenceservice": "qwen", "component": "predictor",
              "serving.knative.dev/service": "qwen-predictor", "serving.knative.dev/configuration": "qwen-predictor",
              "serving.knative.dev/revision": "qwen-predictor-00001"}  # fmt: skip
    ksvc = cluster.apply(knative("Service", "qwen-predictor", ns, isvc, labels=labels))
    config = cluster.apply(knative("Configuration", "qwen-predictor", ns, ksvc, labels=labels))
    revision = cluster.apply(knative("Revision", "qwen-predictor-00001", ns, config, labels=labels))
    deployment = predictor(ns, revision, "qwen-predictor-00001-deployment")
    deployment["metadata"]["labels"] = {**deployment["metadata"].get("labels", {}), **labels}
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(deployment)
        ready = f'llm_replica_ready{{namespace="{ns}",workload="qwen"}} 1'
        text = rendered_when(collector, ns, lambda text: ready in text, "the replica Ready under the InferenceService")
        ours = [line for line in text.splitlines() if f'namespace="{ns}"' in line]
        assert not [line for line in ours if 'workload="qwen-predictor-00001-deployment"' in line]


def test_an_inference_sets_workspace_statefulset_names_the_inference_set(kube_cluster: ControlPlane) -> None:
    """InferenceSet -> Workspace `<set>-<random>` (labelled created-by) -> StatefulSet, as KAITO v0.12.0 makes
    them; the StatefulSet's pod template carries the created-by label."""
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "1"}, labels={"pool": "owners"})
    ns = cluster.namespace("kaito")
    for plural in ("inferencesets", "workspaces"):
        cluster.apply(crd(f"kaito.sh_{plural}.yaml"))
        wait_for(lambda p=plural: established(cluster, f"{p}.kaito.sh"), 60, f"the {plural} CRD Established")  # type: ignore[misc]
    selector = {"matchLabels": {"apps": "phi-4"}}
    inference = {"preset": {"name": "phi-4-mini-instruct"}}
    iset = cluster.apply({"apiVersion": "kaito.sh/v1beta1", "kind": "InferenceSet",
                          "metadata": {"name": "phi-4", "namespace": ns},
                          "spec": {"replicas": 1, "labelSelector": selector,
                                   "template": {"inference": inference}}})  # fmt: skip
    created_by = {"inferenceset.kaito.sh/created-by": "phi-4"}
    workspace = cluster.apply({"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
                               "metadata": {"name": "phi-4-x7k2p", "namespace": ns, "labels": created_by,
                                            "ownerReferences": controlled_by(iset)},
                               "resource": {"labelSelector": selector}, "inference": inference})  # fmt: skip
    sts = predictor(ns, workspace, "phi-4-x7k2p")
    labels = {"kaito.sh/workspace": "phi-4-x7k2p", **created_by}
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "phi-4-x7k2p-headless"
    sts["spec"]["selector"] = {"matchLabels": labels}
    sts["spec"]["template"]["metadata"]["labels"] = labels
    sts["spec"].pop("strategy", None)
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(sts)
        ready = f'llm_replica_ready{{namespace="{ns}",workload="phi-4"}} 1'
        text = rendered_when(collector, ns, lambda text: ready in text, "the replica Ready under the InferenceSet")
        ours = [line for line in text.splitlines() if f'namespace="{ns}"' in line]
        assert not [line for line in ours if 'workload="phi-4-x7k2p"' in line]
