"""The cluster role with a ServiceAccount that may not list nodes or pods, against the real kube-apiserver:
/readyz says which first syncs it waits for and the API server's answer, each refusal is logged once with
the resource and what RBAC refused, and granting the rights makes it ready without a restart."""

from __future__ import annotations

import re
import sys
import time
import uuid
from pathlib import Path

from exporter.demo.vllm_env import free_port
from tests.bundle.servers import process
from tests.core.test_readyz import CLUSTER_ONLY, readyz
from tests.kubecluster import Cluster, wait_for

RBAC = "rbac.authorization.k8s.io/v1"


def said(log: Path, what: str) -> list[str]:
    return re.findall(rf'msg="({what}[^"\\]*(?:\\.[^"\\]*)*)"', log.read_text())


def test_a_service_account_without_rights_is_named_on_readyz_until_granted(
    kube_cluster: Cluster, tmp_path: Path
) -> None:
    cluster = kube_cluster
    namespace = cluster.namespace("readyz")
    name = f"readyz-{uuid.uuid4().hex[:6]}"
    kubeconfig = cluster.kubeconfig(cluster.service_account_token(namespace, "default"), name)
    user = f"system:serviceaccount:{namespace}:default"
    url = f"http://127.0.0.1:{free_port()}"
    args = [sys.executable, "-m", "exporter", "serve", "--role", "cluster", "--listen", url[len("http://") :]]
    args += ["--kubeconfig", str(kubeconfig), *CLUSTER_ONLY]
    log = tmp_path / "serve.log"
    refused = (503, "not ready: waiting for the first sync of nodes, pods (API server: 403 Forbidden on nodes, pods)\n")
    try:
        with process(args, log):
            wait_for(lambda: readyz(url) == refused, 60, "/readyz to name the refusal")
            time.sleep(4)  # three more retries at least (backoff from 0.5 s): none of them said again
            assert readyz(url) == refused
            for resource in ("nodes", "pods"):
                assert said(log, f"{resource}: cannot list") == [
                    f"{resource}: cannot list or watch at {cluster.url}: 403 Forbidden: {resource} is forbidden: "
                    f'User \\"{user}\\" cannot list resource \\"{resource}\\" in API group \\"\\" at the cluster '
                    "scope (retrying with backoff; said again only when the error changes)"
                ]
            # the optional DRA objects: read as none, said once, and readiness does not wait on them
            assert said(log, "resourceslices: ") == ["resourceslices: not available (403 Forbidden); treating as empty"]

            rule = {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["list", "watch"]}
            cluster.apply({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": [rule]})
            cluster.apply(
                {
                    "apiVersion": RBAC,
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                    "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": namespace}],
                }
            )
            wait_for(lambda: readyz(url) == (200, "ready\n"), 90, "/readyz ready once granted")
            for resource in ("nodes", "pods"):
                (again,) = said(log, f"{resource}: answered again")
                assert re.fullmatch(rf"{resource}: answered again after \d+ failed attempts", again)
    finally:
        cluster.must("DELETE", f"/apis/{RBAC}/clusterrolebindings/{name}", ok=(200, 202, 404))
        cluster.must("DELETE", f"/apis/{RBAC}/clusterroles/{name}", ok=(200, 202, 404))
        cluster.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(200, 202))
