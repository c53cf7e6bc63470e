"""GKE's BackendConfigs read live: on a real control plane serving GKE's BackendConfig CRD (as a GKE cluster
serves it, tests/fixtures/gke/PROVENANCE.md), GKE Ingresses to engine Services that name a BackendConfig get
the route timeout series of its timeoutSec, and the live audit's `ingress-timeout-short` is the manifest
audit's of the same objects, through one watch. Without the CRD served, or without the grant, the routes
have no timeout series, the audit says the timeout is unknown and that BackendConfigs are not served or not
granted, and nothing else changes; neither holds back readiness."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import yaml

from exporter.audit import cli
from exporter.config import Cluster, Replicas
from exporter.exposition import render
from tests.audit import objects as o
from tests.audit.grants import kubeconfig_without
from tests.audit.test_audit_real import failing
from tests.collectors import build_engine_pod_collectors
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "tests" / "fixtures" / "gke" / "backendconfigs.cloud.google.com.yaml"
BACKENDCONFIGS = "/apis/cloud.google.com/v1/backendconfigs"
CHECK = "ingress-timeout-short"
Records = dict[str, tuple[str, str]]


def served_crd() -> dict[str, Any]:
    """The stored CRD less what the API server sets on the objects it stores (metadata's server fields, status)."""
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    crd.pop("status")
    for key in ("creationTimestamp", "generation", "resourceVersion", "uid"):
        crd["metadata"].pop(key)
    return crd  # type: ignore[no-any-return]


def engine(name: str, ns: str, annotation: str, config: str) -> list[dict[str, Any]]:
    """An engine Deployment, its Service naming BackendConfig `config` by `annotation`, a GKE Ingress to it,
    and the engine pod the routes collector joins the Service to (never scheduled: only its labels count)."""
    service = o.service(name, ns)
    service["metadata"]["annotations"] = {annotation: json.dumps({"ports": {"8000": config}})}
    ingress = o.ingress(name, ns)
    ingress["metadata"]["name"] = name
    ingress["spec"]["ingressClassName"] = "gce"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-0", "namespace": ns, "labels": {"app": name},
                     "annotations": {"llm-exporter.io/scrape": "true"}},
        "spec": {"nodeSelector": {"backendconfig-test": "nowhere"}, "containers": [{"name": "vllm", "image": "vllm"}]},
    }  # fmt: skip
    return [o.engine(name, ns), service, ingress, pod]


def backendconfig(name: str, ns: str, timeout: int) -> dict[str, Any]:
    return {
        "apiVersion": "cloud.google.com/v1",
        "kind": "BackendConfig",
        "metadata": {"name": name, "namespace": ns},
        # what a BackendConfig often sets beside its timeout: read by the load balancer, not kept here
        "spec": {"timeoutSec": timeout, "connectionDraining": {"drainingTimeoutSec": 60},
                 "healthCheck": {"requestPath": "/health", "port": 8000, "type": "HTTP"}},
    }  # fmt: skip


def objects(ns: str) -> list[dict[str, Any]]:
    return [
        *engine("long", ns, "cloud.google.com/backend-config", "ten-minutes"),
        *engine("short", ns, "beta.cloud.google.com/backend-config", "forty-five"),  # the beta annotation
    ]


def configs(ns: str) -> list[dict[str, Any]]:
    return [backendconfig("ten-minutes", ns, 600), backendconfig("forty-five", ns, 45)]


def audit(files: list[str], kubeconfig: str | None, ns: str) -> tuple[Records, str]:
    """The command's (status, detail) of each workload/check, and its notes."""
    args = argparse.Namespace(files=files, kubeconfig=kubeconfig, namespace=ns, prometheus=None, window="7d",
                              timeout=60.0, output="json", verbose=False)  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    cli.run(args, out, err)
    return {f"{r['name']}/{r['check']}": (r["status"], r["detail"]) for r in json.loads(out.getvalue())}, err.getvalue()


def timeout_lines(text: str, ns: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("llm_route_") and f'namespace="{ns}"' in line]


def refused_backendconfigs(cluster: ControlPlane, ns: str) -> str:
    """A kubeconfig of an account with the cluster role's grants but backendconfigs."""
    return kubeconfig_without(cluster, ns, "no-backendconfigs", lambda _, r: r == "backendconfigs", BACKENDCONFIGS)


NOTE = "audit: note: backendconfigs not served or not granted: checks reading them see none\n"
PASS = ("pass", "every read timeout above 60 s")
FAIL = ("fail", "read timeout not above the longest generation (60 s): Ingress short: 45 s")
UNKNOWN = "timeout not readable from the object (controller default): Ingress "


def test_backendconfigs_read_live_by_the_routes_and_the_audit(kube_cluster: ControlPlane, tmp_path: Path) -> None:
    cluster = kube_cluster
    ns = cluster.namespace("backendconfig")
    for obj in objects(ns):
        cluster.apply(obj)
    manifests = tmp_path / "objects.yaml"
    manifests.write_text(yaml.safe_dump_all([*objects(ns), *configs(ns)]), encoding="utf-8")
    config = Cluster(replicas=Replicas(enabled=False))

    def collectors(kubeconfig: str = str(cluster.admin_kubeconfig)) -> tuple[Any, Any]:
        routes, audit_collector = build_engine_pod_collectors(config, kubeconfig)
        assert (routes.name, audit_collector.name) == ("routes", "audit")
        views: list[Any] = [c._reflectors["backendconfigs"] for c in (routes, audit_collector)]
        assert views[0]._reflector is views[1]._reflector  # one list+watch of BackendConfigs for both
        routes.start()
        audit_collector.start()
        wait_for(lambda: routes.ready() and audit_collector.ready(), 60, "the first lists")
        wait_for(lambda: "long/no-pdb" in failing(render(audit_collector.collect()), ns), 60, "the audit")
        return routes, audit_collector

    assert cluster.request("GET", BACKENDCONFIGS)[0] == 404
    try:
        # without the CRD: no timeout series for these routes, the audit's timeout unknown, said why
        routes, audit_collector = collectors()
        try:
            assert timeout_lines(render(routes.collect()), ns) == []
            found = failing(render(audit_collector.collect()), ns)
            assert {k for k in found if k.endswith(f"/{CHECK}")} == set()
        finally:
            routes.close()
            audit_collector.close()
        unseen, notes = audit([], str(cluster.admin_kubeconfig), ns)
        assert NOTE in notes
        assert {w: unseen[f"{w}/{CHECK}"] for w in ("long", "short")} == {
            "long": ("unknown", UNKNOWN + "long"),
            "short": ("unknown", UNKNOWN + "short"),
        }

        cluster.apply(served_crd())
        wait_for(lambda: cluster.request("GET", BACKENDCONFIGS)[0] == 200, 60, "the BackendConfig CRD served")
        for obj in configs(ns):
            cluster.apply(obj)
        files, _ = audit([str(manifests)], None, ns)
        live, notes = audit([], str(cluster.admin_kubeconfig), ns)
        assert NOTE not in notes
        assert {w: files[f"{w}/{CHECK}"] for w in ("long", "short")} == {"long": PASS, "short": FAIL}
        assert {w: live[f"{w}/{CHECK}"] for w in ("long", "short")} == {"long": PASS, "short": FAIL}
        others = {k for k in live if not k.endswith(f"/{CHECK}")}
        assert len(others) > 20 and {k: unseen[k] for k in others} == {k: live[k] for k in others}

        routes, audit_collector = collectors()  # new ones: the first saw the CRD absent
        try:
            wait_for(lambda: len(timeout_lines(render(routes.collect()), ns)) == 2, 30, "the BackendConfigs seen")
            assert timeout_lines(render(routes.collect()), ns) == [
                f'llm_route_timeout_seconds{{namespace="{ns}",route="long",kind="Ingress",source="spec"}} 600',
                f'llm_route_timeout_seconds{{namespace="{ns}",route="short",kind="Ingress",source="spec"}} 45',
            ]
            wait_for(lambda: f"short/{CHECK}" in failing(render(audit_collector.collect()), ns), 60, "the check")
            found = failing(render(audit_collector.collect()), ns)
            assert {k: v for k, v in found.items() if k.endswith(f"/{CHECK}")} == {
                f"long/{CHECK}": 0,
                f"short/{CHECK}": 1,
            }
            # a watch event: the short one raised, both collectors see it
            cluster.apply(backendconfig("forty-five", ns, 900))
            wait_for(
                lambda: (
                    f'llm_route_timeout_seconds{{namespace="{ns}",route="short",kind="Ingress",source="spec"}} 900'
                    in timeout_lines(render(routes.collect()), ns)
                ),
                30,
                "the edited BackendConfig",
            )
            wait_for(lambda: failing(render(audit_collector.collect()), ns).get(f"short/{CHECK}") == 0, 60, "the check")
        finally:
            routes.close()
            audit_collector.close()

        # served but not granted (an upgrade that ships the binary before the ClusterRole): as if not served
        kubeconfig = refused_backendconfigs(cluster, ns)
        refused, notes = audit([], kubeconfig, ns)
        assert NOTE in notes and refused == unseen
        routes, audit_collector = collectors(kubeconfig)
        try:
            assert timeout_lines(render(routes.collect()), ns) == []
            assert {k for k in failing(render(audit_collector.collect()), ns) if k.endswith(f"/{CHECK}")} == set()
        finally:
            routes.close()
            audit_collector.close()
    finally:
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        for path in (f"{rbac}/clusterrolebindings/{ns}", f"{rbac}/clusterroles/{ns}"):
            cluster.request("DELETE", path)
        cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))
        cluster.request(
            "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/backendconfigs.cloud.google.com"
        )
        wait_for(lambda: cluster.request("GET", BACKENDCONFIGS)[0] == 404, 60, "the BackendConfig CRD gone")
