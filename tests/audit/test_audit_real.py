"""The audit against a real control plane: engine Deployments with the objects around them (a ScaledObject of
the published KEDA CRD with the HPA its operator builds for it, a CPU HPA, a PodDisruptionBudget, a Service,
an Ingress, an InferencePool of the published CRD) on a kwok GPU node. The cluster role's
`llm_workload_check_failing` follows the objects as they change (a node tainted, a PDB added), its cooldown
threshold is the start-up it measured, and the command reads the same cluster through the same checks."""

from __future__ import annotations

import argparse
import functools
import io
import json
from pathlib import Path
from typing import Any

import yaml

from exporter.audit import cli
from exporter.audit.collector import AuditBlindError
from exporter.config import Cluster, Replicas, Routes
from exporter.engines import parser
from exporter.exposition import render
from tests.audit import objects as o
from tests.collectors import build_engine_pod_collectors
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.watchdog.test_watchdog_e2e import install_keda_crds

NODE = "audit-gpu"
POOL_CRD = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "inference-extension"
    / ("inference.networking.k8s.io_inferencepools.yaml")
)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LWS_CRD = FIXTURES / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
AIBRIX_CRD = FIXTURES / "aibrix" / "autoscaling.aibrix.ai_podautoscalers.yaml"
ROUTE_CRD = Path(__file__).resolve().parents[1] / "fixtures" / "openshift" / "routes.crd.yaml"
ON_POOL: dict[str, Any] = {"nodeSelector": {"pool": "audit"}}
SCRAPE = {"llm-exporter.io/scrape": "true"}  # the cluster role's engine-pod watch measures these start-ups


def engine(ns: str, name: str, replicas: int = 2) -> dict[str, Any]:
    obj = o.engine(name, ns, replicas=replicas, **ON_POOL)
    obj["spec"]["template"]["metadata"]["annotations"] = SCRAPE
    return obj


def keda_hpa(ns: str, so: dict[str, Any]) -> dict[str, Any]:
    """The HPA KEDA's operator makes for a ScaledObject: keda-hpa-<name>, owned by it, its window copied."""
    name = so["metadata"]["name"]
    owner = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": name,
             "uid": so["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    labels = {"app.kubernetes.io/name": f"keda-hpa-{name}", "app.kubernetes.io/part-of": name,
              "app.kubernetes.io/managed-by": "keda-operator", "scaledobject.keda.sh/name": name}  # fmt: skip
    spec = so["spec"]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"keda-hpa-{name}", "namespace": ns, "labels": labels, "ownerReferences": [owner]},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec["scaleTargetRef"]["name"]},
            "minReplicas": max(1, spec["minReplicaCount"]),
            "maxReplicas": spec["maxReplicaCount"],
            "metrics": [{"type": "External", "external": {
                "metric": {"name": "s0-prometheus", "selector": {"matchLabels": {"scaledobject.keda.sh/name": name}}},
                "target": {"type": "AverageValue", "averageValue": spec["triggers"][0]["metadata"]["threshold"]}}}],
            **({"behavior": spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]}
               if spec.get("advanced") else {}),
        },
    }  # fmt: skip


def failing(text: str, ns: str) -> dict[str, float]:
    found = parser.parse(text, {"llm_workload_check_failing"}, "").samples.get("llm_workload_check_failing", [])
    return {
        f"{labels['workload']}/{labels['check']}": value
        for labels, value in ((dict(pairs), value) for pairs, value in found)
        if labels["namespace"] == ns
    }


def test_deployment_checks_from_a_real_control_plane(kube_cluster: ControlPlane) -> None:
    cluster = kube_cluster
    install_keda_crds(cluster)
    cluster.apply(yaml.safe_load(POOL_CRD.read_text(encoding="utf-8")))
    wait_for(lambda: cluster.request("GET", "/apis/inference.networking.k8s.io/v1/inferencepools")[0] == 200, 60,
             "InferencePools served")  # fmt: skip
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "4", "nvidia.com/gpu.shared": "8"}, labels={"pool": "audit"})
    ns = cluster.namespace("audit")
    for crd in (ROUTE_CRD, LWS_CRD, AIBRIX_CRD):
        cluster.apply(yaml.safe_load(crd.read_text(encoding="utf-8")))
    for plural in ("leaderworkerset.x-k8s.io/v1/leaderworkersets", "autoscaling.aibrix.ai/v1alpha1/podautoscalers"):
        served = functools.partial(lambda p: cluster.request("GET", f"/apis/{p}")[0] == 200, plural)
        wait_for(served, 60, f"{plural} served")
    wait_for(lambda: cluster.request("GET", "/apis/route.openshift.io/v1/routes")[0] == 200, 60, "Routes served")
    routes, replicas, audit = build_engine_pod_collectors(Cluster(), str(cluster.admin_kubeconfig))
    assert (routes.name, replicas.name, audit.name) == ("routes", "replicas", "audit")
    for collector in (routes, replicas, audit):
        collector.start()
    try:
        wait_for(lambda: routes.ready() and replicas.ready() and audit.ready(), 60, "the first lists")
        wait_for(lambda: cluster.node_ready(NODE), 120, "the kwok node Ready")
        # chat: everything the write-ups ask for, but a scale-down window of 120 s (< 600 s, the default cold start)
        cluster.apply(engine(ns, "chat", replicas=0))  # no replica started yet: nothing measured
        window = {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}}}}
        so = cluster.apply(o.scaledobject("chat", ns, advanced=window))
        cluster.apply(keda_hpa(ns, so))
        for obj in (o.pdb("chat", ns), o.service("chat", ns), o.inference_pool("chat", ns),
                    o.ingress("chat", ns, {"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600"})):  # fmt: skip
            cluster.apply(obj)
        # batch: one replica on CPU utilisation, no PodDisruptionBudget
        cluster.apply(engine(ns, "batch"))
        cluster.apply(o.hpa("batch", ns, minReplicas=1, maxReplicas=1))
        # a web front end: no engine, not audited
        web = o.engine("web", ns, image="nginx:1.27", args=(), gpus=0, **ON_POOL)
        cluster.apply(web)
        # bare: vLLM as a first tutorial deploys it, on a time-sliced GPU, behind a buffering Ingress, scaled to
        # zero by a ScaledObject that reads an empty result as 0
        bare = o.changed(engine(ns, "bare", replicas=1), readinessProbe=None, startupProbe=None, lifecycle=None,
                         args=["--model", "Qwen/Qwen2.5-7B-Instruct"],
                         resources={"limits": {"nvidia.com/gpu.shared": "1"}})  # fmt: skip
        bare["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 30
        cluster.apply(bare)
        lax = {"serverAddress": "http://prometheus:9090", "query": "sum(llm_requests_waiting)", "threshold": "4"}
        trigger = {"type": "prometheus", "metadata": lax}
        bare_so = cluster.apply(o.scaledobject("bare", ns, minReplicaCount=0, triggers=[trigger]))
        cluster.apply(keda_hpa(ns, bare_so))
        cluster.apply(o.service("bare", ns))
        buffering = {"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
                     "nginx.ingress.kubernetes.io/proxy-buffering": "on"}  # fmt: skip
        bare_ingress = o.ingress("bare", ns, buffering)
        bare_ingress["metadata"]["name"] = "bare"
        cluster.apply(bare_ingress)

        def scrape() -> dict[str, float]:
            replicas.collect()  # the start-up tracker reads the pods on each scrape
            return failing(render(audit.collect()), ns)

        def seen() -> bool:
            found = scrape()
            return (
                found.get("batch/no-pdb") == 1
                and found.get("chat/gpu-nodes-untainted") == 1
                and found.get("bare/ingress-buffering") == 1
            )

        wait_for(seen, 60, "the engines audited")
        found = scrape()
        assert {k for k in found if k.startswith("web/")} == set()
        # batch's cooldown depends on whether its start-ups were measured yet (kwok starts pods in seconds)
        assert {k for k, v in found.items() if v == 1 and not k.startswith("bare/")} - {
            "batch/autoscaler-cooldown-short"
        } == {
            "chat/gpu-nodes-untainted",  # the kwok GPU node has no taint yet
            "chat/autoscaler-cooldown-short",  # nothing measured: 120 s < the 600 s default
            "batch/gpu-nodes-untainted",
            "batch/autoscaler-utilization-signal",  # CPU
            "batch/no-pdb",
        }
        assert {k.split("/")[1] for k, v in found.items() if v == 1 and k.startswith("bare/")} - {
            # against a cold start measured by now or not: KEDA's 300 s cooldown to zero; the liveness probe
            # restarting it after 30 s (longer than the seconds kwok takes, shorter than the 600 s default)
            "autoscaler-cooldown-short",
            "no-startup-probe",
        } == {
            "autoscaler-scale-to-zero", "keda-null-as-zero", "no-readiness-probe",
            "grace-period-short", "no-prestop", "no-pdb", "gpu-nodes-untainted", "time-slicing-user-facing",
            "round-robin-routing", "ingress-buffering", "context-oversized",
        }  # fmt: skip
        assert found["bare/ingress-timeout-short"] == 0 and found["bare/autoscaler-utilization-signal"] == 0
        assert "batch/round-robin-routing" not in found  # one replica at most: n/a, so absent
        assert "chat/keda-null-as-zero" in found
        assert "batch/keda-null-as-zero" not in found  # n/a: no ScaledObject
        assert "chat/non-gpu-pods-on-gpu-nodes" not in found  # left to the command
        assert found["chat/autoscaler-scale-to-zero"] == 0 and found["chat/round-robin-routing"] == 0

        # chat's replicas start: the cold start measured from their own start-up (seconds on kwok) replaces the
        # default, and the 120 s window (batch: the HPA's default 300 s) is long enough for it
        cluster.apply(engine(ns, "chat"))
        wait_for(lambda: scrape().get("chat/autoscaler-cooldown-short") == 0, 120, "the measured start-up")
        assert scrape()["batch/autoscaler-cooldown-short"] == 0

        # a taint on the GPU node and a PDB for batch: the next scrape has them, no restart needed
        node = cluster.must("GET", f"/api/v1/nodes/{NODE}")
        node["spec"]["taints"] = [*(node["spec"].get("taints") or []), o.GPU_TAINT]
        cluster.must("PUT", f"/api/v1/nodes/{NODE}", node)
        cluster.apply(o.pdb("batch", ns))
        wait_for(lambda: scrape().get("batch/no-pdb") == 0, 60, "the new PDB seen")
        wait_for(lambda: scrape().get("chat/gpu-nodes-untainted") == 0, 60, "the taint seen")

        # a LeaderWorkerSet scaled by an AIBrix PodAutoscaler on the KV cache (both of the published CRDs), its
        # scale-down delay 3m; no LWS controller runs here, so no pod starts and nothing is measured
        pod = engine(ns, "big")["spec"]["template"]
        group = {"size": 2, "leaderTemplate": pod, "workerTemplate": pod}
        cluster.apply({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                       "metadata": {"name": "big", "namespace": ns},
                       "spec": {"replicas": 1, "leaderWorkerTemplate": group}})  # fmt: skip
        kpa = {"apiVersion": "autoscaling.aibrix.ai/v1alpha1", "kind": "PodAutoscaler",
               "metadata": {"name": "big", "namespace": ns,
                            "annotations": {"kpa.autoscaling.aibrix.ai/scale-down-delay": "3m"}},
               "spec": {"scalingStrategy": "KPA", "minReplicas": 1, "maxReplicas": 4,
                        "scaleTargetRef": {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                                           "name": "big"},
                        "metricsSources": [{"metricSourceType": "pod", "protocolType": "http", "port": "8000",
                                            "path": "metrics", "targetMetric": "gpu_cache_usage_perc",
                                            "targetValue": "0.5"}]}}  # fmt: skip
        cluster.apply(kpa)
        wait_for(lambda: "big/autoscaler-cooldown-short" in scrape(), 60, "the LeaderWorkerSet audited")
        found = scrape()
        assert found["big/autoscaler-cooldown-short"] == 1  # 180 s < the 600 s default cold start
        assert found["big/autoscaler-utilization-signal"] == found["big/fixed-replicas"] == 0
        assert found["big/no-pdb"] == 1
        assert "big/round-robin-routing" not in found  # up to 4 groups, but no Service in view: unknown
        series = parser.parse(render(audit.collect()), {"llm_workload_check_failing"}, "").samples
        kinds = {dict(p)["kind"] for p, _ in series["llm_workload_check_failing"] if dict(p)["workload"] == "big"}
        assert kinds == {"LeaderWorkerSet"}

        # an OpenShift Route of the published CRD to chat's Service: HAProxy's default 30 s cuts generations,
        # for the audit and for the routes collector; the annotation lifts it
        to = {"kind": "Service", "name": "chat", "weight": 100}
        route: dict[str, Any] = {"apiVersion": "route.openshift.io/v1", "kind": "Route",
                                 "metadata": {"name": "chat", "namespace": ns},
                                 "spec": {"host": "chat.apps.example.com", "to": to}}  # fmt: skip
        cluster.apply(route)
        wait_for(lambda: scrape().get("chat/ingress-timeout-short") == 1, 60, "the Route's default timeout")
        timeouts = f'llm_route_timeout_seconds{{namespace="{ns}",route="chat",kind="Route",source="default"}} 30'
        wait_for(lambda: timeouts in render(routes.collect()).splitlines(), 60, "the routes collector's default")
        route["metadata"]["annotations"] = {"haproxy.router.openshift.io/timeout": "10m"}
        cluster.apply(route)
        wait_for(lambda: scrape().get("chat/ingress-timeout-short") == 0, 60, "the Route's annotated timeout")
        annotated = f'llm_route_timeout_seconds{{namespace="{ns}",route="chat",kind="Route",source="annotation"}} 600'
        wait_for(lambda: annotated in render(routes.collect()).splitlines(), 60, "the routes collector's annotation")

        # the command on the same cluster: the same checks, and the pods' view for non-gpu-pods-on-gpu-nodes
        args = argparse.Namespace(files=[], kubeconfig=str(cluster.admin_kubeconfig), namespace=ns, prometheus=None,
                                  window="7d", timeout=60.0, output="json", verbose=False)  # fmt: skip
        out, err = io.StringIO(), io.StringIO()
        rc = cli.run(args, out, err)
        records = {f"{r['name']}/{r['check']}": r for r in json.loads(out.getvalue())}
        assert rc == 1, err.getvalue()
        assert {k for k, r in records.items() if r["status"] == "fail" and r["name"] in ("chat", "batch")} == {
            "batch/autoscaler-utilization-signal", "batch/autoscaler-cooldown-short",
            "chat/autoscaler-cooldown-short",  # the command has no Prometheus here: the 600 s default
            # web's two pods, placed on the GPU node before its taint (NoSchedule evicts nothing), ask for no GPU
            "chat/non-gpu-pods-on-gpu-nodes", "batch/non-gpu-pods-on-gpu-nodes",
        }  # fmt: skip
        detail = records["chat/non-gpu-pods-on-gpu-nodes"]["detail"]
        assert detail.startswith("2 pod(s) without a GPU request: ") and detail.count(f"{ns}/web-") == 2
        assert records["chat/autoscaler-cooldown-short"]["threshold_source"] == "default"
        assert {(r["kind"], r["name"]) for r in records.values()} == {
            ("Deployment", "chat"), ("Deployment", "batch"), ("Deployment", "bare"), ("LeaderWorkerSet", "big"),
        }  # fmt: skip
        assert records["big/autoscaler-cooldown-short"]["status"] == "fail"
        assert records["bare/time-slicing-user-facing"]["status"] == "fail"
        assert records["bare/no-startup-probe"]["status"] == "fail"  # the command's default: 600 s
    finally:
        for collector in (routes, replicas, audit):
            collector.close()
        for name in ("chat", "bare"):
            path = f"/apis/keda.sh/v1alpha1/namespaces/{ns}/scaledobjects/{name}"
            cluster.must("DELETE", path, ok=(200, 202, 404))
            gone = functools.partial(lambda p: cluster.request("GET", p)[0] == 404, path)
            wait_for(gone, 60, f"ScaledObject {name} deleted")
        cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))
        cluster.delete_nodes([NODE])


def test_without_the_new_grants_the_audit_fails_visibly_and_is_ready(kube_cluster: ControlPlane) -> None:
    """An upgrade that ships the binary before the ClusterRole: the old grants (nodes and pods only). The audit's
    lists are refused (403): it is ready at once, and its collect fails, naming what it cannot see."""
    cluster = kube_cluster
    ns = cluster.namespace("audit-rbac")
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "old-grants", "namespace": ns}}
    cluster.must("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", account)
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": f"{ns}-old"},
            "rules": [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["list", "watch"]}]}  # fmt: skip
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"{ns}-old"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{ns}-old"},
               "subjects": [{"kind": "ServiceAccount", "name": "old-grants", "namespace": ns}]}  # fmt: skip
    cluster.apply(role)
    cluster.apply(binding)
    kubeconfig = cluster.kubeconfig(cluster.service_account_token(ns, "old-grants"), f"{ns}-old")
    (audit,) = build_engine_pod_collectors(
        Cluster(routes=Routes(enabled=False), replicas=Replicas(enabled=False)), str(kubeconfig)
    )
    audit.start()
    try:
        wait_for(audit.ready, 60, "the refused lists")
        try:
            audit.collect()
        except AuditBlindError as exc:
            assert str(exc) == "deployments, statefulsets not granted or not served: no engine workload to audit"
        else:
            raise AssertionError("the audit collected without seeing any workload")
    finally:
        audit.close()
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        for path in (
            f"{rbac}/clusterrolebindings/{ns}-old",
            f"{rbac}/clusterroles/{ns}-old",
            f"/api/v1/namespaces/{ns}",
        ):
            cluster.must("DELETE", path, ok=(200, 202))
