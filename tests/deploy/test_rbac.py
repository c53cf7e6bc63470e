"""RBAC: read-only, and exactly the resources each role's code watches — read from the code, so a new
watch without its grant (or a grant nobody uses any more) fails here, not in a cluster."""

from __future__ import annotations

import re

import pytest

from exporter.sources import kube_resources
from tests.deploy.manifests import BASE, ROOT, Obj, find, pod_spec, render

# Which packages build each role's collectors (exporter/roles.py).
ROLE_PACKAGES = {
    "node": ("exporter/engines", "exporter/gpu"),
    "cluster": ("exporter/kube", "exporter/replicas", "exporter/routes", "exporter/watchdog", "exporter/audit"),
}
REFLECTOR = re.compile(r"(?:Reflector|shared)\(\s*\w+,\s*\"(\w+)\"")


def watched(role: str) -> set[tuple[str, str]]:
    """(apiGroup, resource) of every Reflector the role's packages create."""
    found = set()
    for package in ROLE_PACKAGES[role]:
        for path in sorted((ROOT / package).rglob("*.py")):
            for resource in REFLECTOR.findall(path.read_text(encoding="utf-8")):
                found.add(api_resource(resource))
    return found


def api_resource(resource: str) -> tuple[str, str]:
    """(API group, resource) of a resource the adapter can watch, from its own tables (built-in or custom:
    a custom one's plural, which two groups may share)."""
    if resource in kube_resources._CUSTOM:
        group, _, plural = kube_resources._CUSTOM[resource]
        return group, plural
    return kube_resources._LISTERS[resource][0], resource


def granted(role: Obj) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, "no resourceNames, nonResourceURLs or wildcards"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def test_the_code_scan_finds_the_watches() -> None:
    assert watched("node") == {("", "pods")}
    assert watched("cluster") == {("", "nodes"), ("", "pods"), ("resource.k8s.io", "resourceslices"),
                                  ("resource.k8s.io", "resourceclaims"), ("resource.k8s.io", "deviceclasses"),
                                  ("", "services"),
                                  ("networking.k8s.io", "ingresses"),
                                  ("gateway.networking.k8s.io", "httproutes"),
                                  ("cloud.google.com", "backendconfigs"),
                                  ("autoscaling", "horizontalpodautoscalers"),
                                  ("keda.sh", "scaledobjects"), ("keda.sh", "scaledjobs"),
                                  ("", "configmaps"),
                                  # audit
                                  ("apps", "deployments"), ("apps", "statefulsets"),
                                  ("leaderworkerset.x-k8s.io", "leaderworkersets"),
                                  ("autoscaling.aibrix.ai", "podautoscalers"),
                                  ("policy", "poddisruptionbudgets"),
                                  ("route.openshift.io", "routes"),
                                  ("inference.networking.k8s.io", "inferencepools"),
                                  # replicas: a RayCluster's controller (KubeRay's RayService)
                                  ("ray.io", "rayclusters"),
                                  # audit: the serving operators' resources and what they refer to
                                  ("serving.kserve.io", "inferenceservices"),
                                  ("serving.kserve.io", "servingruntimes"),
                                  ("serving.kserve.io", "clusterservingruntimes"),
                                  ("kaito.sh", "workspaces"), ("kaito.sh", "inferencesets"),
                                  ("ray.io", "rayservices"),
                                  ("apps.nvidia.com", "nimservices"),
                                  ("ome.io", "inferenceservices"), ("ome.io", "servingruntimes"),
                                  ("ome.io", "clusterservingruntimes"),
                                  ("workloads.x-k8s.io", "rolebasedgroups"),
                                  ("workloads.x-k8s.io", "rolebasedgroupscalingadapters"),
                                  ("nvidia.com", "dynamographdeployments")}  # fmt: skip


def test_no_code_reads_single_objects() -> None:
    """The adapter only GETs collections (a watch is a list with watch=true); a GET of one object, or a client
    `read_*` call, would need the `get` verb as well."""
    for resource in kube_resources.RESOURCES:
        group, version, *_ = kube_resources._LISTERS.get(resource) or kube_resources._CUSTOM[resource]
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        plural = kube_resources._CUSTOM[resource][2] if resource in kube_resources._CUSTOM else resource
        assert kube_resources.collection_path(resource, None) == f"{base}/{plural}"
        if resource in kube_resources._CUSTOM or kube_resources._LISTERS[resource][2]:
            assert kube_resources.collection_path(resource, "ns") == f"{base}/namespaces/ns/{plural}"
    single_reads = re.compile(r"\bread_(namespaced_\w+|node\w*|resource_\w+|device_class\w*)\(")
    calls = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for path in sorted((ROOT / "exporter").rglob("*.py"))
        for m in single_reads.finditer(path.read_text(encoding="utf-8"))
    ]
    assert calls == []


@pytest.mark.parametrize("role", ["node", "cluster"])
def test_each_role_may_list_and_watch_exactly_what_it_watches(role: str) -> None:
    cluster_role = find(render(BASE), "ClusterRole", f"llm-exporter-{role}")
    grants = granted(cluster_role)
    assert set(grants) == watched(role)
    for key, verbs in grants.items():
        assert verbs == {"list", "watch"}, key
    assert "aggregationRule" not in cluster_role


@pytest.mark.parametrize(("role", "kind"), [("node", "DaemonSet"), ("cluster", "Deployment")])
def test_each_workload_runs_as_the_account_bound_to_its_role(role: str, kind: str) -> None:
    objs = render(BASE)
    name = f"llm-exporter-{role}"
    account = pod_spec(find(objs, kind, name))["serviceAccountName"]
    find(objs, "ServiceAccount", account)
    bindings = [o for o in objs if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    bound = [b for b in bindings if any(s.get("name") == account for s in b["subjects"])]
    assert len(bound) == 1
    assert bound[0]["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    assert bound[0]["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "llm-exporter"}]


def test_no_other_rbac_objects() -> None:
    objs = render(BASE)
    rbac = sorted((o["kind"], o["metadata"]["name"]) for o in objs if o["apiVersion"].startswith("rbac."))
    assert rbac == [
        ("ClusterRole", "llm-exporter-cluster"),
        ("ClusterRole", "llm-exporter-node"),
        ("ClusterRoleBinding", "llm-exporter-cluster"),
        ("ClusterRoleBinding", "llm-exporter-node"),
    ]
