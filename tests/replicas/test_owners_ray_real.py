"""The workload of KubeRay's pods against a real control plane, with KubeRay's published CRDs (v1.7.0,
tests/fixtures/crds): a RayService, the RayCluster it controls and the head and worker pods the RayCluster
controls, each with the ownerReference KubeRay's controllers write (rayservice_controller.go:1544,
raycluster_controller.go:1753 and :1800), bound by the scheduler to a kwok GPU node and readied by kwok. The
cluster role's replica series name the RayService, the resource the user edits; no Deployment in between.

KubeRay itself does not run here: the objects are written as it writes them, named as it names them
(`<rayservice>-<5 random>`, `<cluster>-head-<5>`, `<cluster>-<group>-worker-<5>`)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import yaml

from exporter.exposition import render
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.replicas.real import rendered_when, replicas_collector

NODE = "ray-gpu"
CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
CONTAINER = {"name": "ray-head", "image": "rayproject/ray-llm:2.46.0-py311-cu124"}


def established(cluster: ControlPlane, plural: str) -> bool:
    status, body = cluster.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.ray.io")
    conditions = ((body or {}).get("status") or {}).get("conditions") or [] if status == 200 else []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def controller_ref(owner: dict[str, Any]) -> list[dict[str, Any]]:
    meta = owner["metadata"]
    return [{"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
             "controller": True, "blockOwnerDeletion": True}]  # fmt: skip


def ray_pod(ns: str, name: str, node_type: str, group: str, cluster: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "ownerReferences": controller_ref(cluster),
            "labels": {"ray.io/cluster": cluster["metadata"]["name"], "ray.io/node-type": node_type,
                       "ray.io/group": group, "app.kubernetes.io/created-by": "kuberay-operator"},
            "annotations": {"llm-exporter.io/scrape": "true"},
        },
        "spec": {
            "nodeSelector": {"pool": "ray"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{**CONTAINER, "name": f"ray-{node_type}",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }  # fmt: skip


def test_the_replica_series_name_the_rayservice_behind_the_raycluster(kube_cluster: ControlPlane) -> None:
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "2"}, labels={"pool": "ray"})
    ns = cluster.namespace("ray")
    for plural in ("rayclusters", "rayservices"):
        cluster.apply(yaml.safe_load((CRDS / f"ray.io_{plural}.yaml").read_text(encoding="utf-8")))
        wait_for(partial(established, cluster, plural), 60, f"the {plural} CRD Established")
    head_group = {"rayStartParams": {}, "template": {"spec": {"containers": [CONTAINER]}}}
    service = cluster.apply({"apiVersion": "ray.io/v1", "kind": "RayService",
                             "metadata": {"name": "llm", "namespace": ns},
                             "spec": {"rayClusterConfig": {"headGroupSpec": head_group}}})  # fmt: skip
    ray_cluster = cluster.apply({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                 "metadata": {"name": "llm-x7k2p", "namespace": ns,
                                              "labels": {"ray.io/originated-from-cr-name": "llm",
                                                         "ray.io/originated-from-crd": "RayService"},
                                              "ownerReferences": controller_ref(service)},
                                 "spec": {"headGroupSpec": head_group}})  # fmt: skip
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(ray_pod(ns, "llm-x7k2p-head-8zqmv", "head", "headgroup", ray_cluster))
        cluster.apply(ray_pod(ns, "llm-x7k2p-gpu-group-worker-4tq9d", "worker", "gpu-group", ray_cluster))
        ready = f'llm_replica_ready{{namespace="{ns}",workload="llm"}} 2'
        rendered_when(collector, ns, lambda text: ready in text, "the head and worker Ready under the RayService")
        text = render(collector.collect())
        ours = [line for line in text.splitlines() if f'namespace="{ns}"' in line]
        assert ours and not [line for line in ours if 'workload="llm-x7k2p"' in line]
        infos = sorted(line for line in ours if line.startswith("llm_replica_pod_info{"))
        assert [('workload="llm"' in line, 'pod="llm-x7k2p-' in line) for line in infos] == [(True, True)] * 2
        assert f'llm_replica_startup_seconds_count{{namespace="{ns}",workload="llm",phase="starting"}} 2' in text
