"""llm_model_info against a real control plane: the pod of a real-world vLLM Deployment (AIBrix's sample, stored
as published, with `--revision` added to its command) is made by the controller manager, bound by the scheduler
to a kwok node and made Running by kwok; the cluster role's engine-pod watch reads it.

kwok runs no container, so its status has no `imageID`: the series first says no digest. The kubelet's report
of the image it ran is then written as the kubelet writes it (the pod's status subresource), and the series
follows it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from exporter.exposition import render
from tests.kube.objects import engine_deployment
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.replicas.real import replicas_collector

NODE = "model-info-gpu"
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus"
REVISION = "6a6f4aa4197940add57724a7707d069478df56b1"
DIGEST = "sha256:953d3a06d5e64ab582985cd7401289d3abf2a2c14ef2158e9a84313daeec77d7"


def aibrix_deployment(ns: str) -> dict[str, Any]:
    published = next(
        d
        for d in yaml.safe_load_all((CORPUS / "aibrix-autoscaling" / "deploy.yaml").read_text())
        if d["kind"] == "Deployment"
    )
    container = copy.deepcopy(published["spec"]["template"]["spec"]["containers"][0])
    container["command"] += ["--revision", REVISION]
    for probe in ("livenessProbe", "readinessProbe"):  # kwok readies a pod at once; no probe runs
        container.pop(probe)
    return engine_deployment(
        ns,
        "deepseek",
        pod_spec={
            "nodeSelector": {"pool": "model-info"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [container],
        },
    )


def series(text: str, ns: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(f'llm_model_info{{namespace="{ns}",')]


def test_model_info_of_a_real_pod(kube_cluster: ControlPlane) -> None:
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "1"}, labels={"pool": "model-info"})
    ns = cluster.namespace("modelinfo")
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(aibrix_deployment(ns))
        found = wait_for(lambda: series(render(collector.collect()), ns), 120, "the engine pod's llm_model_info")
        (line,) = found
        pod = line.split('pod="', 1)[1].split('"', 1)[0]
        labels = (
            'model="deepseek-ai/DeepSeek-R1-Distill-Llama-8B",served_model_name="deepseek-r1-distill-llama-8b",'
            f'revision="{REVISION}",image="vllm/vllm-openai:v0.7.1",image_digest="{{}}",engine="vllm",'
            'engine_version="0.7.1",quantization="",dtype="half",max_model_len="12288"'
        )
        assert line == f'llm_model_info{{namespace="{ns}",pod="{pod}",{labels.format("")}}} 1'

        def running() -> dict[str, Any] | None:
            obj = cluster.must("GET", f"/api/v1/namespaces/{ns}/pods/{pod}")
            return obj if obj.get("status", {}).get("containerStatuses") else None

        status = wait_for(running, 60, "kwok's container statuses")["status"]
        statuses = [dict(s, imageID=f"docker.io/vllm/vllm-openai@{DIGEST}") for s in status["containerStatuses"]]
        cluster.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{pod}/status",
            body={"status": {"containerStatuses": statuses}},
            content_type="application/merge-patch+json",
        )
        expected = f'llm_model_info{{namespace="{ns}",pod="{pod}",{labels.format(DIGEST)}}} 1'
        wait_for(lambda: series(render(collector.collect()), ns) == [expected], 60, "the digest the kubelet reports")
