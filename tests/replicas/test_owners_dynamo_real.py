"""The workload of Dynamo-managed engine pods against a real control plane: the Deployment a
DynamoComponentDeployment makes for one component of a DynamoGraphDeployment, as the operator writes it
(exporter/k8s/owner_refs.py cites its sources): named after the DynamoComponentDeployment, controlled by it,
carrying its labels (`nvidia.com/dynamo-graph-deployment-name` among them) on itself and on its pod template,
its pods selected by `nvidia.com/selector`. The controller manager makes the pods, kwok binds and readies
them; the cluster role's replica series name the DynamoGraphDeployment, the resource the user edits.

Dynamo publishes its CRDs only inside a repository too large to take here, so they are not served: the
ownerReference names a kind the API server does not know, which the garbage collector leaves alone (it
cannot map the kind, so it cannot find the owner absent), and the exporter reads no field of the operator's
resources, only the ownerReference's group and kind and the label."""

from __future__ import annotations

from typing import Any

from tests.kube.objects import engine_deployment
from tests.kubecluster import Cluster as ControlPlane
from tests.replicas.real import rendered_when, replicas_collector

NODE = "dynamo-gpu"
GRAPH = "vllm-agg"
COMPONENT = "VllmDecodeWorker"
DCD = f"{GRAPH}-{COMPONENT.lower()}"  # graph.go GetDCDResourceName: `<graph>-<component, lower-cased>`
DCD_UID = "6c1f0e2a-8d3b-4b7e-9f21-3a5c7d9e1b42"


def component_deployment(ns: str, labelled: bool = True) -> dict[str, Any]:
    """The Deployment of the DynamoComponentDeployment `DCD` (dynamocomponentdeployment_controller.go
    generateDeployment/generatePodTemplateSpec): the DynamoComponentDeployment's labels (graph.go
    generateSingleDCD), plus on the pods the selector, component type and metrics labels."""
    dcd_labels = {"nvidia.com/dynamo-component": COMPONENT, "nvidia.com/dynamo-namespace": f"{ns}-{GRAPH}"}
    if labelled:
        dcd_labels["nvidia.com/dynamo-graph-deployment-name"] = GRAPH
    obj = engine_deployment(
        ns,
        DCD,
        pod_spec={
            "nodeSelector": {"pool": "dynamo"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "terminationGracePeriodSeconds": 60,
            "containers": [{"name": "main", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.7.0",
                            "command": ["/bin/sh", "-c"], "args": ["python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B"],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    )  # fmt: skip
    selector = {"nvidia.com/selector": DCD}
    obj["metadata"]["labels"] = dcd_labels
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoComponentDeployment", "name": DCD, "uid": DCD_UID,
         "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    obj["spec"]["selector"] = {"matchLabels": selector}
    template = obj["spec"]["template"]["metadata"]
    template["labels"] = {**dcd_labels, **selector, "nvidia.com/dynamo-component-type": "worker",
                          "nvidia.com/metrics-enabled": "true"}  # fmt: skip
    return obj


def test_the_replica_series_name_the_graph_deployment_behind_the_component_deployment(
    kube_cluster: ControlPlane,
) -> None:
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "1"}, labels={"pool": "dynamo"})
    ns = cluster.namespace("dynamo")
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(component_deployment(ns))
        ready = f'llm_replica_ready{{namespace="{ns}",workload="{GRAPH}"}} 1'
        text = rendered_when(collector, ns, lambda text: ready in text, "the replica Ready under the graph")
        ours = [line for line in text.splitlines() if f'namespace="{ns}"' in line]
        assert not [line for line in ours if f'workload="{DCD}"' in line]
        (info,) = [line for line in ours if line.startswith("llm_replica_pod_info{")]
        assert f'workload="{GRAPH}"' in info and f'pod="{DCD}-' in info
        assert f'llm_replica_startup_seconds_count{{namespace="{ns}",workload="{GRAPH}",phase="starting"}} 1' in text


def test_a_component_deployment_without_the_graph_label_keeps_its_deployment(kube_cluster: ControlPlane) -> None:
    """A DynamoComponentDeployment created by hand carries no graph label (graph.go sets it only on those a
    graph makes): nothing names a resource above it, so its Deployment stands."""
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "1"}, labels={"pool": "dynamo"})
    ns = cluster.namespace("dynamo-bare")
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(component_deployment(ns, labelled=False))
        ready = f'llm_replica_ready{{namespace="{ns}",workload="{DCD}"}} 1'
        rendered_when(collector, ns, lambda text: ready in text, "the replica Ready under its own Deployment")
