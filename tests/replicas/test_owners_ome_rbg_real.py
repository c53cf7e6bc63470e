"""The workload of OME- and RBG-managed engine pods against a real control plane serving the operators'
published CRDs (tests/fixtures/crds: OME v0.1.5's InferenceService, RBG v0.7.0's RoleBasedGroup) with their
published samples (tests/fixtures/audit_corpus) as the resources the user edits. The objects the operators
would generate carry the controller ownerReference their reconcilers write (exporter/k8s/owner_refs.py):
OME's engine Deployment `<isvc>-engine`, and the StatefulSet `<group>-<role>` of an RBG role whose
`rbg.workloads.x-k8s.io/role-workload-type` is apps/v1/StatefulSet. The controller manager makes their pods,
kwok binds and readies them; the cluster role's replica series name the InferenceService and the
RoleBasedGroup, the resources the user knows."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from exporter.exposition import render
from tests.kube.objects import engine_deployment
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.replicas.real import rendered_when, replicas_collector

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NODE = "ome-rbg-gpu"
POD_SPEC: dict[str, Any] = {
    "nodeSelector": {"pool": "ome-rbg"},
    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
}
WORKLOAD_TYPE = "rbg.workloads.x-k8s.io/role-workload-type"


def _load(path: Path) -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    (doc,) = [d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader) if d]  # a file's one object
    return dict(doc)


def established(cluster: ControlPlane, name: str) -> bool:
    status, body = cluster.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = ((body or {}).get("status") or {}).get("conditions") or [] if status == 200 else []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
         "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    return obj


def role_statefulset(ns: str, group: dict[str, Any], role: dict[str, Any]) -> dict[str, Any]:
    """What RBG v0.7.0's StatefulSet reconciler applies for `role` (sts_reconciler.go: `<group>-<role>`, the
    group-name and role-name labels as selector, the role's template and replicas)."""
    labels = {"rbg.workloads.x-k8s.io/group-name": group["metadata"]["name"],
              "rbg.workloads.x-k8s.io/role-name": role["name"]}  # fmt: skip
    template = copy.deepcopy(role["standalonePattern"]["template"])
    template["metadata"]["labels"] = {**template["metadata"].get("labels", {}), **labels}
    template["metadata"]["annotations"] = {"llm-exporter.io/scrape": "true"}
    template["spec"].update(POD_SPEC)
    name = f"{group['metadata']['name']}-{role['name']}"
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"replicas": role["replicas"], "serviceName": f"s-{name}", "selector": {"matchLabels": labels},
                 "template": template},
    }  # fmt: skip
    return owned_by(sts, group)


def series(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{")]


def test_the_replica_series_name_the_ome_inference_service_and_the_role_based_group(
    kube_cluster: ControlPlane,
) -> None:
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "2"}, labels={"pool": "ome-rbg"})
    for name in ("ome.io_inferenceservices", "workloads.x-k8s.io_rolebasedgroups"):
        served = str(cluster.apply(_load(FIXTURES / "crds" / f"{name}.yaml"))["metadata"]["name"])
        wait_for(lambda: established(cluster, served), 60, f"{name} Established")  # noqa: B023 (waited for here)
    ns = cluster.namespace("ome-rbg")
    isvc = _load(FIXTURES / "audit_corpus" / "ome-llama" / "llama-3-1-8b-instruct.yaml")
    isvc["metadata"]["namespace"] = ns
    isvc = cluster.apply(isvc)
    group = _load(FIXTURES / "audit_corpus" / "rbg-sglang" / "pd-disagg-standalone.yaml")
    group["metadata"]["namespace"] = ns
    prefill = next(r for r in group["spec"]["roles"] if r["name"] == "prefill")
    prefill["annotations"] = {WORKLOAD_TYPE: "apps/v1/StatefulSet"}
    group = cluster.apply(group)
    assert group["apiVersion"] == "workloads.x-k8s.io/v1alpha2"
    runner = {"name": "ome-container", "image": "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64",
              "resources": {"limits": {"nvidia.com/gpu": "1"}}}  # fmt: skip
    engine = engine_deployment(
        ns, "llama-3-1-8b-instruct-engine", replicas=1, pod_spec={**POD_SPEC, "containers": [runner]}
    )
    with replicas_collector(cluster, ns, NODE) as collector:
        cluster.apply(owned_by(engine, isvc))
        cluster.apply(role_statefulset(ns, group, prefill))
        wanted = [
            f'llm_replica_ready{{namespace="{ns}",workload="llama-3-1-8b-instruct"}} 1',
            f'llm_replica_ready{{namespace="{ns}",workload="sglang-pd-inference"}} 1',
        ]
        rendered_when(
            collector,
            ns,
            lambda text: all(w in text for w in wanted),
            "each replica Ready under the resource the user edits",
        )
        text = render(collector.collect())
        ours = [line for line in text.splitlines() if f'namespace="{ns}"' in line]
        generated = ('workload="llama-3-1-8b-instruct-engine"', 'workload="sglang-pd-inference-prefill"')
        assert ours and not [line for line in ours if any(g in line for g in generated)]
        infos = sorted(line for line in series(text, "llm_replica_pod_info") if f'namespace="{ns}"' in line)
        assert len(infos) == 2
        assert 'workload="llama-3-1-8b-instruct"' in infos[0] and 'pod="llama-3-1-8b-instruct-engine-' in infos[0]
        assert 'workload="sglang-pd-inference"' in infos[1] and 'pod="sglang-pd-inference-prefill-0"' in infos[1]
