"""The operator resource behind a generated workload, from ownerReferences as the API server returns them
(apiVersion, kind, name, uid, controller, blockOwnerDeletion: what `controllerutil.SetControllerReference`
and `metav1.NewControllerRef` write)."""

from __future__ import annotations

from typing import Any

from exporter import pod_fields
from exporter.audit import measured
from exporter.k8s import owner_refs, owners, workloads
from exporter.replicas import owned, startup
from exporter.replicas.autoscalers import Autoscaler
from exporter.replicas.startup import BUCKETS, Histogram, PodStart

NS = "llm"


def ref(api_version: str, kind: str, name: str, uid: str, controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
            "controller": controller, "blockOwnerDeletion": True}  # fmt: skip


def obj(kind: str, name: str, *refs: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "ownerReferences": list(refs)}
    if labels:
        meta["labels"] = labels
    return {"kind": kind, "metadata": meta}


ISVC = ref("serving.kserve.io/v1beta1", "InferenceService", "llama", "4a0c7c1e-1b51-4e0e-9d7e-7f3c2d9c0a11")
WORKSPACE = ref("kaito.sh/v1beta1", "Workspace", "phi-4", "8f1e2d3c-4b5a-4968-8776-655443322110")
NIMSERVICE = ref("apps.nvidia.com/v1alpha1", "NIMService", "meta-llama3", "0d9c8b7a-6f5e-4d3c-2b1a-0f9e8d7c6b5a")
OME = ref("ome.io/v1beta1", "InferenceService", "llama-3-1-8b", "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b")
RBG = ref("workloads.x-k8s.io/v1alpha2", "RoleBasedGroup", "sglang-pd", "6f7a8b9c-0d1e-4f2a-9b3c-4d5e6f7a8b9c")


def test_the_operator_owner_of_each_generated_workload() -> None:
    assert owners.operator_owner(obj("Deployment", "llama-predictor", ISVC)["metadata"]) == (
        "InferenceService", "llama")  # fmt: skip
    assert owners.operator_owner(obj("StatefulSet", "phi-4", WORKSPACE)["metadata"]) == ("Workspace", "phi-4")
    assert owners.operator_owner(obj("LeaderWorkerSet", "meta-llama3", NIMSERVICE)["metadata"]) == (
        "NIMService", "meta-llama3")  # fmt: skip
    assert owners.operator_owner(obj("Deployment", "llama-3-1-8b-engine", OME)["metadata"]) == (
        "InferenceService", "llama-3-1-8b")  # fmt: skip
    assert owners.operator_owner(obj("StatefulSet", "sglang-pd-decode", RBG)["metadata"]) == (
        "RoleBasedGroup", "sglang-pd")  # fmt: skip


def test_an_owner_that_is_not_an_operator_resource_or_not_the_controller_ends_the_chain() -> None:
    revision = ref(
        "serving.knative.dev/v1", "Revision", "llama-predictor-00001", "1b2c3d4e-0000-4000-8000-000000000001"
    )
    # a Knative Service of no InferenceService: Knative's own Deployment stands
    assert owners.operator_owner(obj("Deployment", "llama-predictor-00001-deployment", revision)["metadata"]) is None
    # an ownerReference without controller: true (a user's or a GC-only owner) is not who reverts the edits
    assert owners.operator_owner(obj("Deployment", "vllm", ref(*_isvc_args(), controller=False))["metadata"]) is None
    # the same kind in another group is another resource (Kubeflow's Workspace)
    other = ref("kubeflow.org/v1alpha1", "Workspace", "my-workspace", "2c3d4e5f-0000-4000-8000-000000000002")
    assert owners.operator_owner(obj("StatefulSet", "ws-my-workspace-sts", other)["metadata"]) is None
    # RBG's default workload, a RoleInstanceSet, owns its RoleInstances: no workload the cluster role reads
    instances = ref("workloads.x-k8s.io/v1alpha2", "RoleInstanceSet", "sglang-pd-decode", "7a8b9c0d-0000-4000-8000-3")
    assert owners.operator_owner(obj("RoleInstance", "sglang-pd-decode-0", instances)["metadata"]) is None
    assert owners.operator_owner(obj("Deployment", "vllm")["metadata"]) is None


def test_a_knative_revisions_deployment_names_the_inference_service_of_its_labels() -> None:
    """KServe's Knative mode: InferenceService -> Knative Service -> Configuration -> Revision -> Deployment,
    the Revision's labels (KServe's among them) copied onto the Deployment by Knative."""
    revision = ref(
        "serving.knative.dev/v1", "Revision", "llama-predictor-00001", "1b2c3d4e-0000-4000-8000-000000000001"
    )
    labels = {
        "serving.kserve.io/inferenceservice": "llama",
        "component": "predictor",
        "serving.knative.dev/service": "llama-predictor",
        "serving.knative.dev/configuration": "llama-predictor",
        "serving.knative.dev/revision": "llama-predictor-00001",
    }
    deployment = obj("Deployment", "llama-predictor-00001-deployment", revision, labels=labels)
    assert owners.operator_owner(deployment["metadata"]) == ("InferenceService", "llama")
    assert owners.owned_record("Deployment")(deployment) == (
        (NS, "Deployment", "llama-predictor-00001-deployment"), ("InferenceService", "llama"))  # fmt: skip
    # the label on a Deployment another controller owns names nothing
    plain = obj("Deployment", "vllm", labels={"serving.kserve.io/inferenceservice": "llama"})
    assert owners.operator_owner(plain["metadata"]) is None


def test_an_inference_sets_workspace_statefulset_names_the_inference_set() -> None:
    """KAITO: InferenceSet -> Workspace `<set>-<random>` -> StatefulSet, whose pod template (its selector) carries
    the Workspace's `inferenceset.kaito.sh/created-by` label."""
    member = ref("kaito.sh/v1beta1", "Workspace", "phi-4-x7k2p", "9a8b7c6d-0000-4000-8000-000000000009")
    sts = obj("StatefulSet", "phi-4-x7k2p", member)
    template = {"kaito.sh/workspace": "phi-4-x7k2p", "inferenceset.kaito.sh/created-by": "phi-4"}
    sts["spec"] = {"template": {"metadata": {"labels": template}}}
    assert owners.operator_owner(sts["metadata"], template) == ("InferenceSet", "phi-4")
    assert owners.owned_record("StatefulSet")(sts) == ((NS, "StatefulSet", "phi-4-x7k2p"), ("InferenceSet", "phi-4"))
    generated = workloads.workload(sts)
    assert generated is not None and generated.owner == "phi-4"
    # a Workspace of its own is the resource the user edits
    assert owners.operator_owner(sts["metadata"], {"kaito.sh/workspace": "phi-4-x7k2p"}) == (
        "Workspace", "phi-4-x7k2p")  # fmt: skip


def test_a_dynamo_component_deployments_deployment_names_the_graph_deployment() -> None:
    """Dynamo: DynamoGraphDeployment -> DynamoComponentDeployment `<graph>-<component>` (labelled with the graph's
    name) -> Deployment `<graph>-<component>` with the DynamoComponentDeployment's labels, on itself and its pod
    template (exporter/k8s/owner_refs.py cites the operator's sources)."""
    dcd = ref("nvidia.com/v1alpha1", "DynamoComponentDeployment", "vllm-agg-vllmdecodeworker",
              "0b1c2d3e-0000-4000-8000-00000000000b")  # fmt: skip
    labels = {"nvidia.com/dynamo-component": "VllmDecodeWorker", "nvidia.com/dynamo-namespace": "llm-vllm-agg",
              "nvidia.com/dynamo-graph-deployment-name": "vllm-agg"}  # fmt: skip
    deployment = obj("Deployment", "vllm-agg-vllmdecodeworker", dcd, labels=labels)
    assert owners.operator_owner(deployment["metadata"]) == ("DynamoGraphDeployment", "vllm-agg")
    template = {**labels, "nvidia.com/selector": "vllm-agg-vllmdecodeworker"}
    lws = obj("LeaderWorkerSet", "vllm-agg-vllmdecodeworker-0", dcd)  # multinode: the label on its template
    assert owners.operator_owner(lws["metadata"], template) == ("DynamoGraphDeployment", "vllm-agg")
    # a DynamoComponentDeployment of no graph (created by hand, unlabelled) is not followed: its Deployment stands
    assert owners.operator_owner(obj("Deployment", "vllm-agg-vllmdecodeworker", dcd)["metadata"]) is None


def _isvc_args() -> tuple[str, str, str, str]:
    return (ISVC["apiVersion"], ISVC["kind"], ISVC["name"], ISVC["uid"])


def test_the_generated_workload_of_a_pod() -> None:
    rs = ref("apps/v1", "ReplicaSet", "llama-predictor-7d9f8c6b5d", "3d4e5f60-0000-4000-8000-000000000003")
    sts = ref("apps/v1", "StatefulSet", "phi-4", "4e5f6071-0000-4000-8000-000000000004")
    assert owners.generated_of_pod(obj("Pod", "llama-predictor-7d9f8c6b5d-x2k4q", rs)["metadata"]) == (
        "Deployment", "llama-predictor")  # fmt: skip
    assert owners.generated_of_pod(obj("Pod", "phi-4-0", sts)["metadata"]) == ("StatefulSet", "phi-4")
    worker = obj("Pod", "meta-llama3-0-1", ref("apps/v1", "StatefulSet", "meta-llama3-0", "5f607182-0000-4000-8000-0000"
                 "00000005"), labels={"leaderworkerset.sigs.k8s.io/name": "meta-llama3"})  # fmt: skip
    assert owners.generated_of_pod(worker["metadata"]) == ("LeaderWorkerSet", "meta-llama3")
    assert owners.generated_of_pod(obj("Pod", "bare")["metadata"]) == ("Pod", "bare")


# RBG v0.7.0's default workload: RoleBasedGroup -> RoleInstanceSet `<group>-<role>` -> RoleInstance `<set>-<n>` ->
# pod, named as the RoleInstance (standalone), with the role's labels and the instance's (owner_refs.THROUGH_LABELS)
INSTANCE = ref("workloads.x-k8s.io/v1alpha2", "RoleInstance", "sglang-pd-decode-0", "8b9c0d1e-0000-4000-8000-4")
RBG_POD_LABELS = {
    "rbg.workloads.x-k8s.io/group-name": "sglang-pd", "rbg.workloads.x-k8s.io/role-name": "decode",
    "rbg.workloads.x-k8s.io/role-instance-name": "sglang-pd-decode-0",
    "rbg.workloads.x-k8s.io/component-name": "decode", "rbg.workloads.x-k8s.io/component-id": "0",
    "statefulset.kubernetes.io/pod-name": "sglang-pd-decode-0",
}  # fmt: skip


def test_a_role_instances_pod_names_its_role_based_group_by_its_label() -> None:
    pod = obj("Pod", "sglang-pd-decode-0", INSTANCE, labels=RBG_POD_LABELS)
    assert owners.operator_owner(pod["metadata"]) == ("RoleBasedGroup", "sglang-pd")
    assert owners.generated_of_pod(pod["metadata"]) == ("RoleBasedGroup", "sglang-pd")
    assert pod_fields.workload_of(pod["metadata"]) == "sglang-pd"  # every role reads it so (the node role too)
    # without the label the chain ends at the RoleInstance, as for any controller the role does not read
    bare = obj("Pod", "sglang-pd-decode-0", INSTANCE, labels={"rbg.workloads.x-k8s.io/role-name": "decode"})
    assert owners.generated_of_pod(bare["metadata"]) == ("RoleInstance", "sglang-pd-decode-0")
    # the same kind in another group is another controller; the label on a Deployment role's pod names nothing
    other = ref("other.example.com/v1", "RoleInstance", "sglang-pd-decode-0", "9c0d1e2f-0000-4000-8000-5")
    assert owners.generated_of_pod(obj("Pod", "x", other, labels=RBG_POD_LABELS)["metadata"]) == (
        "RoleInstance", "sglang-pd-decode-0")  # fmt: skip
    rs = ref("apps/v1", "ReplicaSet", "sglang-pd-decode-6c8f9d7b5c", "0d1e2f3a-0000-4000-8000-6")
    assert owners.generated_of_pod(obj("Pod", "sglang-pd-decode-6c8f9d7b5c-q2w4e", rs, labels=RBG_POD_LABELS)[
        "metadata"]) == ("Deployment", "sglang-pd-decode")  # fmt: skip
    start = startup.pod_start({**pod, "metadata": {**pod["metadata"], "creationTimestamp": "2026-12-03T10:00:00Z"}}, "")
    assert start is not None and (start.workload_kind, start.workload) == ("RoleBasedGroup", "sglang-pd")


def test_an_hpa_on_an_rbg_roles_scaling_adapter_names_the_role_based_group() -> None:
    """RBG makes the adapter `<group>-<role>` for a role's scalingAdapter; an HPA of the user's targets it."""
    assert owner_refs.scaled_through(RBG_POD_LABELS) == [
        (("RoleBasedGroupScalingAdapter", "sglang-pd-decode"), ("RoleBasedGroup", "sglang-pd"))
    ]
    assert owner_refs.scaled_through({"rbg.workloads.x-k8s.io/group-name": "sglang-pd"}) == []  # no role: no adapter
    pod = PodStart("u1", NS, "sglang-pd", 0.0, 1.0, 2.0, tuple(sorted(RBG_POD_LABELS.items())), "sglang-pd-decode-0",
                   workload_kind="RoleBasedGroup")  # fmt: skip
    resolve = owned.resolver(owned.scale_targets([pod]))
    hpa = Autoscaler(NS, "sglang-pd-decode", "decode-hpa", "hpa", 1, 10, 1, 1, False, "RoleBasedGroupScalingAdapter")
    plain = Autoscaler(NS, "sglang-pd-decode", "hpa", "hpa", 1, 4, 1, 1, False, "Deployment")  # a Deployment's
    assert [a.workload for a in owned.autoscalers([hpa, plain], resolve)] == ["sglang-pd", "sglang-pd-decode"]


def test_owned_record_keeps_only_operator_owned_workloads() -> None:
    record = owners.owned_record("Deployment")
    assert record(obj("Deployment", "llama-predictor", ISVC)) == ((NS, "Deployment", "llama-predictor"),
                                                                  ("InferenceService", "llama"))  # fmt: skip
    assert record(obj("Deployment", "vllm")) is None


def test_top_owner_follows_the_table_and_stops_at_a_cycle() -> None:
    table = {(NS, "Deployment", "a"): ("InferenceService", "b"), (NS, "InferenceService", "b"): ("Deployment", "a")}
    assert owners.top_owner(NS, "Deployment", "a", table) in {("InferenceService", "b"), ("Deployment", "a")}
    assert owners.top_owner(NS, "Deployment", "vllm", table) == ("Deployment", "vllm")
    # the same name under another kind is another object
    assert owners.top_owner(NS, "StatefulSet", "a", table) == ("StatefulSet", "a")


def test_the_series_name_the_owner_and_add_up_its_generated_workloads() -> None:
    record = owners.owned_record("Deployment")
    generated = [record(obj("Deployment", name, ISVC)) for name in ("llama-predictor", "llama-transformer")]
    resolve = owned.resolver(r for r in generated if r is not None)
    pod = PodStart("u1", NS, "llama-predictor", 0.0, 1.0, 2.0, workload_kind="Deployment")
    plain = PodStart("u2", NS, "vllm", 0.0, None, None, workload_kind="Deployment")
    assert [p.workload for p in owned.pods([pod, plain], resolve)] == ["llama", "vllm"]
    hpa = Autoscaler(NS, "llama-predictor", "llama-predictor", "hpa", 1, 4, 1, 1, False, "Deployment")
    assert [a.workload for a in owned.autoscalers([hpa], resolve)] == ["llama"]

    def h(*values: float) -> Histogram:
        out = Histogram([0] * len(BUCKETS))
        for v in values:
            out.observe(v)
        return out

    by_generated = {(NS, "llama-predictor", "starting"): h(40.0), (NS, "llama-transformer", "starting"): h(3.0),
                    (NS, "vllm", "starting"): h(7.0)}  # fmt: skip
    kinds = {(NS, "llama-predictor"): "Deployment", (NS, "llama-transformer"): "Deployment", (NS, "vllm"): "Deployment"}
    merged = owned.histograms(by_generated, kinds, resolve)
    assert set(merged) == {(NS, "llama", "starting"), (NS, "vllm", "starting")}
    assert merged[(NS, "llama", "starting")] == h(40.0, 3.0)
    assert by_generated[(NS, "llama-predictor", "starting")] == h(40.0)  # the tracker's own are left as they were


def test_a_workload_names_its_operator_owner_which_the_audit_looks_its_measurements_up_by() -> None:
    deployment = obj("Deployment", "llama-predictor", ISVC)
    deployment.update(apiVersion="apps/v1", spec={"template": {"spec": {"containers": [{"name": "kserve-container"}]}}})
    w = workloads.workload(deployment)
    assert w is not None and (w.kind, w.name, w.owner) == ("Deployment", "llama-predictor", "llama")
    plain = workloads.workload({**deployment, "metadata": {"name": "vllm", "namespace": NS}})
    assert plain is not None and plain.owner == ""


class _Answers:
    """Prometheus answering the cold-start query with the series the cluster role exports (instant vector)."""

    def query(self, expr: str) -> list[dict[str, Any]]:
        if expr != measured.COLD_START:
            return []
        return [{"metric": {"namespace": NS, "workload": "llama"}, "value": [1764972000.0, "95"]}]

    def label_values(self, label: str) -> list[str]:
        return []


def test_the_live_audit_finds_the_cold_start_the_series_name_by_the_owner() -> None:
    deployment = obj("Deployment", "llama-predictor", ISVC)
    deployment.update(apiVersion="apps/v1", spec={"template": {"spec": {"containers": [{"name": "kserve-container"}]}}})
    w = workloads.workload(deployment)
    assert w is not None
    assert measured.from_prometheus(_Answers())(w).cold_start_seconds == 95.0


# KubeRay v1.7.0: the RayService's RayCluster is `<name>-<5 random>` (utils/util.go:369 GenerateRayClusterName),
# its controller the RayService (rayservice_controller.go:1544); the head and worker pods' controller is the
# RayCluster (raycluster_controller.go:1753, :1800), the pods named `<cluster>-head-<5>`, `<cluster>-<group>-worker-<5>`
RAYSERVICE = ref("ray.io/v1", "RayService", "llm", "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d")
RAYCLUSTER = ref("ray.io/v1", "RayCluster", "llm-x7k2p", "7b8c9d0e-1f2a-4b3c-9d4e-5f6a7b8c9d0e")


def test_kuberay_pods_name_the_rayservice_through_its_raycluster() -> None:
    ray_labels = {"ray.io/cluster": "llm-x7k2p", "ray.io/node-type": "head", "ray.io/group": "headgroup"}
    head = obj("Pod", "llm-x7k2p-head-8zqmv", RAYCLUSTER, labels=ray_labels)
    worker = obj("Pod", "llm-x7k2p-gpu-group-worker-4tq9d", RAYCLUSTER,
                 labels={**ray_labels, "ray.io/node-type": "worker", "ray.io/group": "gpu-group"})  # fmt: skip
    assert owners.generated_of_pod(head["metadata"]) == ("RayCluster", "llm-x7k2p")
    assert owners.generated_of_pod(worker["metadata"]) == ("RayCluster", "llm-x7k2p")
    record = owners.owned_record("RayCluster")
    cluster = record(obj("RayCluster", "llm-x7k2p", RAYSERVICE))
    assert cluster == ((NS, "RayCluster", "llm-x7k2p"), ("RayService", "llm"))
    # a RayCluster of its own, or of a RayJob (a batch job, not a serving resource), stands as the workload
    assert record(obj("RayCluster", "batch")) is None
    rayjob = ref("ray.io/v1", "RayJob", "eval", "8c9d0e1f-2a3b-4c4d-8e5f-6a7b8c9d0e1f")
    assert record(obj("RayCluster", "eval-rk2fz", rayjob)) is None
    # during a zero-downtime upgrade the RayService owns two RayClusters: both are its replicas
    upgrade = record(obj("RayCluster", "llm-q9w3e", RAYSERVICE))
    resolve = owned.resolver(r for r in (cluster, upgrade) if r is not None)
    starts = [PodStart("u1", NS, "llm-x7k2p", 0.0, 1.0, 2.0, workload_kind="RayCluster"),
              PodStart("u2", NS, "llm-q9w3e", 5.0, 6.0, None, workload_kind="RayCluster"),
              PodStart("u3", NS, "batch", 0.0, None, None, workload_kind="RayCluster")]  # fmt: skip
    assert [p.workload for p in owned.pods(starts, resolve)] == ["llm", "llm", "batch"]
