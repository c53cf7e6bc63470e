"""The workload of the pods of RBG's default workload, a RoleInstanceSet, against a real control plane serving
RBG v0.7.0's published CRDs (tests/fixtures/crds: RoleBasedGroup, RoleInstanceSet, RoleInstance) with its
published sample (tests/fixtures/audit_corpus/rbg-sglang/pd-disagg-standalone.yaml) as the resource the user
edits. RBG itself does not run here: the objects are written as its v0.7.0 controllers write them (sgl-project/rbg
01df6fc), each with the controller ownerReference its reconciler sets:

- the RoleInstanceSet `<group>-<role>`, controlled by the RoleBasedGroup, labelled with the role's common labels
  (pkg/reconciler/roleinstanceset_reconciler.go:140-203, api/workloads/v1alpha2/helper.go:34-42, 82-95);
- its RoleInstance `<set>-0`, controlled by the set, with the set's labels and its identity labels
  (roleinstanceset/statefulmode/stateful_instance_set_utils.go:139-213);
- the RoleInstance's pod, named as the instance (a standalone role's one component), controlled by it, with the
  component template's labels (the role's template, the common labels, component-size, the identity labels),
  the revision hash and the component labels, the instance's two readiness gates, hostname and subdomain
  (roleinstance/core/instance_core.go:116-160, utils/instance_utils.go:61-104).

The scheduler binds the pods to a kwok GPU node and kwok readies them; the cluster role's replica series name the
RoleBasedGroup, whose RoleInstanceSet and RoleInstances the role does not read: the pods' group-name label does
(`exporter.k8s.owner_refs.THROUGH_LABELS`). An HPA on the adapter RBG makes for a role (`<group>-<role>`) names the
RoleBasedGroup too, from the same pods' group-name and role-name labels (`owner_refs.SCALED_THROUGH`)."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import yaml

from exporter.exposition import render
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.replicas.real import rendered_when, replicas_collector
from tests.replicas.test_owners_ome_rbg_real import POD_SPEC, established, owned_by, series

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NODE = "rbg-instances-gpu"  # in the node pool of POD_SPEC, `ome-rbg`
PREFIX = "rbg.workloads.x-k8s.io/"
REVISION = "sglang-pd-inference-prefill-5d8f7c9b6"  # a ControllerRevision `<set>-<hash>`; pods carry the hash


def _load(path: Path) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]  # a file's one object
    return dict(doc)


def common_labels(group: dict[str, Any], role: str) -> dict[str, str]:
    """helper.go:34-42 GetCommonLabelsFromRole: group-name, role-name, group-uid (sha1 of `<ns>/<name>`, :153-158)."""
    meta = group["metadata"]
    unique = hashlib.sha1(f"{meta['namespace']}/{meta['name']}".encode()).hexdigest()  # RBG's own key
    return {f"{PREFIX}group-name": meta["name"], f"{PREFIX}role-name": role, f"{PREFIX}group-uid": unique}


def instance_set(ns: str, group: dict[str, Any], role: dict[str, Any]) -> dict[str, Any]:
    """roleinstanceset_reconciler.go:140-203 for a standalone role: `<group>-<role>`, the common labels as
    selector, the revision and role-type labels, one component named after the role, size 1."""
    labels = common_labels(group, role["name"])
    name = f"{group['metadata']['name']}-{role['name']}"
    template = copy.deepcopy(role["standalonePattern"]["template"])
    template["metadata"]["labels"] = {**template["metadata"].get("labels", {}), **labels,
                                      f"{PREFIX}component-size": "1"}  # fmt: skip
    template["metadata"]["annotations"] = {"llm-exporter.io/scrape": "true"}  # the user's opt-in, on the template
    template["spec"].update(POD_SPEC)
    component = {"name": role["name"], "serviceName": f"s-{name}", "size": 1, "template": template}
    riset = {
        "apiVersion": "workloads.x-k8s.io/v1alpha2",
        "kind": "RoleInstanceSet",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {**labels, f"{PREFIX}role-revision-{role['name']}": "5d8f7c9b6",
                                f"{PREFIX}role-type": "PodTemplate"},
                     "annotations": {f"{PREFIX}role-size": str(role["replicas"]),
                                     f"{PREFIX}role-instance-pattern": "Stateful"}},  # the default, :149-151
        "spec": {"replicas": role["replicas"], "selector": {"matchLabels": labels},
                 "roleInstanceTemplate": {"components": [component]}},
    }  # fmt: skip
    return owned_by(riset, group)


def role_instance(riset: dict[str, Any], ordinal: int) -> dict[str, Any]:
    """stateful_instance_set_utils.go:139-213: `<set>-<ordinal>`, the set's labels and selector, the revision
    hash, the identity labels (also written into each component's template), controlled by the set."""
    name = f"{riset['metadata']['name']}-{ordinal}"
    identity = {"statefulset.kubernetes.io/pod-name": name, f"{PREFIX}role-instance-index": str(ordinal)}
    spec = copy.deepcopy(riset["spec"]["roleInstanceTemplate"])
    for component in spec["components"]:
        component["template"]["metadata"]["labels"].update(identity)
    instance = {
        "apiVersion": "workloads.x-k8s.io/v1alpha2",
        "kind": "RoleInstance",
        "metadata": {"name": name, "namespace": riset["metadata"]["namespace"],
                     "labels": {**riset["metadata"]["labels"], "controller-revision-hash": REVISION, **identity}},
        "spec": spec,
    }  # fmt: skip
    return owned_by(instance, riset)


def instance_pod(instance: dict[str, Any]) -> dict[str, Any]:
    """instance_core.go:116-160: GetPodFromTemplate (the component template's labels and annotations), named as
    the instance, the short revision hash, the component labels, hostname and subdomain, the readiness gates."""
    (component,) = instance["spec"]["components"]
    template = component["template"]
    name = instance["metadata"]["name"]
    labels = {**template["metadata"]["labels"], "controller-revision-hash": REVISION.rsplit("-", 1)[1],
              f"{PREFIX}role-instance-name": name, f"{PREFIX}component-name": component["name"],
              f"{PREFIX}component-id": "0"}  # fmt: skip
    gates = [{"conditionType": "InPlaceUpdateReady"}, {"conditionType": "InstancePodReady"}]  # pod_util.go:34-50
    spec = {**copy.deepcopy(template["spec"]), "hostname": name, "subdomain": component["serviceName"],
            "readinessGates": gates}  # fmt: skip
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": instance["metadata"]["namespace"], "labels": labels,
                     "annotations": dict(template["metadata"]["annotations"])},
        "spec": spec,
    }  # fmt: skip
    return owned_by(pod, instance)


def sample_hpa(ns: str, adapter: str) -> dict[str, Any]:
    """The HPA of RBG's scaling sample (tests/fixtures/audit_corpus/rbg-sglang/scaling-adapter-with-hpa.yaml: min 1,
    max 10, CPU at 80 %) on the adapter RBG makes for a role, `<group>-<role>`, as RBG's autoscaler guide names it
    (doc/features/autoscaler.md, "Scaling Adapter Naming Convention")."""
    text = (FIXTURES / "audit_corpus" / "rbg-sglang" / "scaling-adapter-with-hpa.yaml").read_text(encoding="utf-8")
    (hpa,) = [d for d in yaml.safe_load_all(text) if d and d["kind"] == "HorizontalPodAutoscaler"]
    hpa["metadata"]["namespace"] = ns
    hpa["spec"]["scaleTargetRef"]["name"] = adapter
    return dict(hpa)


def test_the_replica_series_name_the_role_based_group_of_a_role_instance_set(kube_cluster: ControlPlane) -> None:
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "2"}, labels={"pool": "ome-rbg"})
    for name in ("rolebasedgroups", "roleinstancesets", "roleinstances"):
        served = str(cluster.apply(_load(FIXTURES / "crds" / f"workloads.x-k8s.io_{name}.yaml"))["metadata"]["name"])
        wait_for(lambda: established(cluster, served), 60, f"{name} Established")  # noqa: B023 (waited for here)
    ns = cluster.namespace("rbg-instances")
    group = _load(FIXTURES / "audit_corpus" / "rbg-sglang" / "pd-disagg-standalone.yaml")
    group["metadata"]["namespace"] = ns
    group = cluster.apply(group)  # no role-workload-type annotation: each role is a RoleInstanceSet
    roles = {r["name"]: r for r in group["spec"]["roles"]}
    with replicas_collector(cluster, ns, NODE) as collector:
        pods = []
        for role in ("prefill", "decode"):
            riset = cluster.apply(instance_set(ns, group, roles[role]))
            instance = cluster.apply(role_instance(riset, 0))
            pods.append(cluster.apply(instance_pod(instance)))
        assert [p["metadata"]["ownerReferences"][0]["kind"] for p in pods] == ["RoleInstance"] * 2
        cluster.apply(sample_hpa(ns, "sglang-pd-inference-prefill"))  # prefill's scalingAdapter, enabled
        wanted = [
            f'llm_replica_ready{{namespace="{ns}",workload="sglang-pd-inference"}} 2',
            f'llm_autoscaler_max_replicas{{namespace="{ns}",workload="sglang-pd-inference",autoscaler="prefill-hpa",'
            f'kind="hpa"}} 10',
        ]
        rendered_when(
            collector, ns, lambda text: all(w in text for w in wanted), "both pods Ready under the RoleBasedGroup"
        )
        text = render(collector.collect())
        ours = [line for line in text.splitlines() if f'namespace="{ns}"' in line]
        # neither the RoleInstance (`<group>-<role>-0`) nor the RoleInstanceSet names a series
        assert ours and not [line for line in ours if 'workload="sglang-pd-inference-' in line]
        infos = sorted(line for line in series(text, "llm_replica_pod_info") if f'namespace="{ns}"' in line)
        assert infos == [
            f'llm_replica_pod_info{{namespace="{ns}",pod="sglang-pd-inference-{role}-0",'
            f'workload="sglang-pd-inference"}} 1'
            for role in ("decode", "prefill")
        ]
        assert (
            f'llm_replica_startup_seconds_count{{namespace="{ns}",workload="sglang-pd-inference",phase="starting"}} 2'
            in text
        )
