"""An account with the cluster role's grants less some, on the real control plane: what an upgrade that ships
the binary before its ClusterRole leaves the exporter, for the tests of the live audit's optional resources."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "base" / "rbac.yaml"


def kubeconfig_without(
    cluster: ControlPlane, ns: str, account: str, refused: Callable[[str, str], bool], probe: str
) -> str:
    """A kubeconfig of the ServiceAccount `account` of `ns`, bound (by a ClusterRole and binding named `ns`) to
    the cluster role's rules less each (API group, resource) `refused` names; returned once the API server
    refuses it `probe` (a path of a refused resource) and grants it Deployments."""
    role = next(d for d in yaml.safe_load_all(RBAC.read_text(encoding="utf-8"))
                if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "llm-exporter-cluster")  # fmt: skip
    rules = [{**r, "resources": [x for x in r["resources"] if not any(refused(g, x) for g in r["apiGroups"])]}
             for r in role["rules"]]  # fmt: skip
    assert rules != role["rules"], "nothing refused"
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": ns}}
    cluster.must("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", sa)
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": ns},
                   "rules": [r for r in rules if r["resources"]]})  # fmt: skip
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": ns},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ns},
                   "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}]})  # fmt: skip
    token = cluster.service_account_token(ns, account)
    wait_for(lambda: cluster.request("GET", probe, token=token)[0] == 403, 30, f"{probe} refused")
    wait_for(lambda: cluster.request("GET", "/apis/apps/v1/deployments", token=token)[0] == 200, 30, "granted")
    return str(cluster.kubeconfig(token, ns))
