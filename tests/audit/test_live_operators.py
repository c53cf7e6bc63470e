"""The serving operators' resources read live: on a real control plane serving the operators' published CRDs
(KServe v0.20.0's InferenceService, RBG v0.7.0's RoleBasedGroup, KubeRay v1.7.0's RayService) with an
InferenceService, a published RoleBasedGroup sample and a published RayService sample
(tests/fixtures/audit_corpus), and the workloads the operators generate from the first two with the controller
ownerReference their reconcilers write (KServe's `<name>-predictor` Deployment, RBG's StatefulSet of a role),
the live audit's findings are the manifest audit's of a dump of the same objects: each on the resource the user
edits with its field, the generated workloads not audited twice. Without the grant (as without the CRDs) the
generated workloads are audited as themselves, as before, and said why."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import yaml

from exporter.audit import cli, live
from exporter.config import Cluster, Replicas, Routes
from exporter.engines import parser
from exporter.exposition import render
from exporter.sources import kube_resources
from tests.audit.generated import CONTAINER, controlled_by, inference_service, predictor
from tests.audit.grants import kubeconfig_without
from tests.collectors import build_engine_pod_collectors
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.replicas.test_owners_ome_rbg_real import POD_SPEC, WORKLOAD_TYPE, _load, established, role_statefulset

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
CRDS = {
    "inferenceservices.serving.kserve.io": FIXTURES / "operator_crds" / "serving.kserve.io_inferenceservices.yaml",
    "rolebasedgroups.workloads.x-k8s.io": FIXTURES / "crds" / "workloads.x-k8s.io_rolebasedgroups.yaml",
    "rayservices.ray.io": FIXTURES / "crds" / "ray.io_rayservices.yaml",
}
# the checks that read the cluster's nodes and pods: live they are visible (if none), in manifests not
CLUSTER_WIDE = {"gpu-nodes-untainted", "no-gpu-toleration", "non-gpu-pods-on-gpu-nodes", "time-slicing-user-facing"}
Record = tuple[str, str, str, str, str, str]  # kind, name, check, status, field, detail
NOTE = "not served or not granted: a workload such a resource generates is audited as itself\n"


def audit(files: list[str], kubeconfig: str | None, ns: str) -> tuple[set[Record], str]:
    args = argparse.Namespace(files=files, kubeconfig=kubeconfig, namespace=ns, prometheus=None, window="7d",
                              timeout=60.0, output="json", verbose=False)  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    cli.run(args, out, err)
    records = {
        (r["kind"], r["name"], r["check"], r["status"], r["field"] or "", r["detail"] or "")
        for r in json.loads(out.getvalue())
        if r["namespace"] == ns and r["check"] not in CLUSTER_WIDE
    }
    return records, err.getvalue()


def subjects(records: set[Record]) -> set[tuple[str, str]]:
    return {(r[0], r[1]) for r in records}


def ray_service(ns: str) -> dict[str, Any]:
    sample = (FIXTURES / "audit_corpus" / "kuberay-llm" / "ray-service.llm-serve.yaml").read_text(encoding="utf-8")
    (obj,) = [d for d in yaml.safe_load_all(sample) if d and d["kind"] == "RayService"]  # beside it, a Secret
    obj["metadata"]["namespace"] = ns
    return obj  # type: ignore[no-any-return]


def refused_operators(cluster: ControlPlane, ns: str) -> str:
    """A kubeconfig of an account with the cluster role's grants but the operators' resources."""
    operated = {kube_resources._CUSTOM[r][0::2] for r in live.OPERATED}
    isvcs = f"/apis/serving.kserve.io/v1beta1/namespaces/{ns}/inferenceservices"
    return kubeconfig_without(cluster, ns, "no-operators", lambda g, r: (g, r) in operated, isvcs)


def test_operator_resources_are_audited_live_as_in_manifests(kube_cluster: ControlPlane, tmp_path: Path) -> None:
    cluster = kube_cluster
    for name, crd_file in CRDS.items():
        cluster.apply(_load(crd_file))
        wait_for(lambda n=name: established(cluster, n), 60, f"{name} Established")  # type: ignore[misc]
    ns = cluster.namespace("operated")
    try:
        isvc = cluster.apply(inference_service("llama", ns))
        group = _load(FIXTURES / "audit_corpus" / "rbg-sglang" / "pd-disagg-standalone.yaml")
        group["metadata"]["namespace"] = ns
        prefill = next(r for r in group["spec"]["roles"] if r["name"] == "prefill")
        prefill["annotations"] = {WORKLOAD_TYPE: "apps/v1/StatefulSet"}
        group = cluster.apply(group)
        ray = cluster.apply(ray_service(ns))
        deployment = cluster.apply(predictor(isvc, **POD_SPEC))
        prefill = next(r for r in group["spec"]["roles"] if r["name"] == "prefill")
        statefulset = cluster.apply(role_statefulset(ns, group, prefill))
        # what `kubectl get -o yaml` of the namespace gives: the resources and what the operators generated
        dump = tmp_path / "dump.yaml"
        dump.write_text(yaml.safe_dump_all([isvc, group, ray, deployment, statefulset]), encoding="utf-8")

        files, notes = audit([str(dump)], None, ns)
        assert subjects(files) == {("InferenceService", "llama"), ("RoleBasedGroup", "sglang-pd-inference/prefill"),
                                   ("RoleBasedGroup", "sglang-pd-inference/decode"),
                                   ("RayService", "ray-serve-llm")}  # fmt: skip
        live_found, notes = audit([], str(cluster.admin_kubeconfig), ns)
        (note,) = [line for line in notes.splitlines(keepends=True) if line.endswith(NOTE)]  # the other operators'
        assert not {"kserve_inferenceservices", "rolebasedgroups", "rayservices"} & set(
            note[13 : -len(NOTE)].split(", ")
        )
        assert live_found == files
        fields = {(r[0], r[2]): r[4] for r in live_found}
        assert fields[("InferenceService", "fixed-replicas")] == "spec.predictor.minReplicas"
        assert fields[("RoleBasedGroup", "no-prestop")].startswith("spec.roles[")
        assert len(live_found) > 40

        # the cluster role's audit collector: its series name the resources, with their kind
        (audit_collector,) = build_engine_pod_collectors(
            Cluster(replicas=Replicas(enabled=False), routes=Routes(enabled=False)), str(cluster.admin_kubeconfig)
        )
        audit_collector.start()
        try:
            wait_for(audit_collector.ready, 60, "the first lists")
            verdicts = {"fail": 1.0, "pass": 0.0}
            expected = {(r[0], r[1], r[2]): verdicts[r[3]] for r in live_found if r[3] in verdicts}

            def series() -> dict[tuple[str, str, str], float]:
                return {
                    (labels["kind"], labels["workload"], labels["check"]): value
                    for labels, value in _samples(render(audit_collector.collect()))
                    if labels["namespace"] == ns and labels["check"] not in CLUSTER_WIDE
                }

            wait_for(lambda: series() == expected, 60, "the audit's series, each optional watch listed")
        finally:
            audit_collector.close()

        # without the grant (an upgrade that ships the binary before the ClusterRole; a CRD not installed reads
        # the same): the generated workloads audited as themselves, the RayService not at all
        refused, notes = audit([], refused_operators(cluster, ns), ns)
        assert f"audit: note: {', '.join(live.OPERATED)} {NOTE}" in notes
        assert subjects(refused) == {("Deployment", "llama-predictor"), ("StatefulSet", "sglang-pd-inference-prefill")}
        manifests_before, _ = audit([str(_write(tmp_path / "generated.yaml", [deployment, statefulset]))], None, ns)
        assert refused == manifests_before
    finally:
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        for path in (f"{rbac}/clusterrolebindings/{ns}", f"{rbac}/clusterroles/{ns}"):
            cluster.request("DELETE", path)
        cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))


def _write(path: Path, objs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(objs), encoding="utf-8")
    return path


def _samples(text: str) -> list[tuple[dict[str, str], float]]:
    found = parser.parse(text, {"llm_workload_check_failing"}, "").samples.get("llm_workload_check_failing", [])
    return [(dict(pairs), value) for pairs, value in found]


def test_without_the_crd_a_generated_deployment_is_audited_as_itself(kube_cluster: ControlPlane) -> None:
    """NIM Operator's CRD is not served here (no test installs it): the Deployment a NIMService made, its controller
    owner that NIMService, is audited as the Deployment it is, as before the NIMServices were read, and the command
    says why."""
    cluster = kube_cluster
    assert cluster.request("GET", "/apis/apps.nvidia.com/v1alpha1/nimservices")[0] == 404
    ns = cluster.namespace("no-crd")
    owner = {"apiVersion": "apps.nvidia.com/v1alpha1", "kind": "NIMService", "metadata": {"name": "llama"}}
    # as NIM Operator v3.1.2 renders it (exporter/k8s/operators/nim.py): named after the NIMService, pods
    # labelled `app: <name>`, one container `<name>-ctr` (the image of its published samples)
    container = {**CONTAINER, "name": "llama-ctr", "image": "nvcr.io/nim/meta/llama-3.2-1b-instruct:1.8"}
    del container["args"]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llama", "namespace": ns, "labels": {"app": "llama"},
                     "ownerReferences": controlled_by(owner)},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llama"}},
                 "template": {"metadata": {"labels": {"app": "llama"}},
                              "spec": {**POD_SPEC, "containers": [container]}}},
    }  # fmt: skip
    try:
        cluster.apply(deployment)
        found, notes = audit([], str(cluster.admin_kubeconfig), ns)
        (note,) = [line for line in notes.splitlines(keepends=True) if line.endswith(NOTE)]
        assert "nimservices" in note[13 : -len(NOTE)].split(", ")
        assert subjects(found) == {("Deployment", "llama")}
        assert {r[2] for r in found} >= {"no-readiness-probe", "no-prestop", "fixed-replicas"}
    finally:
        cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))
