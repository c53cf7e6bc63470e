"""The shipped manifests on a real kube-apiserver: the published CRDs of the Prometheus Operator and KEDA
install, both overlays and the KEDA example apply server-side, the chart installs with
`helm install --dry-run=server`, and a wrong field is rejected (so the applies can fail)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.deploy.helm import CHART, helm, template
from tests.deploy.manifests import DEPLOY, OVERLAYS, Obj, find, render
from tests.deploy_real.helpers import ensure
from tests.kubecluster import Cluster, wait_for

KEDA_EXAMPLE = DEPLOY / "examples" / "keda-scaledobject.yaml"


def test_the_published_crds_serve_the_kinds_the_manifests_use(crds: Cluster) -> None:
    kinds = crds.kubectl("api-resources", "--api-group=monitoring.coreos.com", "-o", "name").stdout.split()
    kinds += crds.kubectl("api-resources", "--api-group=keda.sh", "-o", "name").stdout.split()
    assert set(kinds) >= {
        "servicemonitors.monitoring.coreos.com",
        "podmonitors.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
        "scaledobjects.keda.sh",
        "scaledjobs.keda.sh",
        "triggerauthentications.keda.sh",
    }


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_the_overlay_applies_server_side(crds: Cluster, overlay: str) -> None:
    result = crds.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(OVERLAYS[overlay]))
    applied = result.stdout
    for obj in render(OVERLAYS[overlay]):
        assert f"{obj['metadata']['name']} serverside-applied" in applied, applied
    # the custom resources are stored as rendered: no field was pruned by the CRD schema on the way
    for obj in render(OVERLAYS[overlay]):
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            name = f"{obj['kind'].lower()}/{obj['metadata']['name']}"
            stored = yaml.safe_load(crds.kubectl("get", name, "-n", "llm-exporter", "-o", "yaml").stdout)
            assert stored["spec"] == obj["spec"], f"{name} changed on the server"


def test_the_keda_example_applies_server_side(crds: Cluster) -> None:
    namespace = yaml.safe_load(KEDA_EXAMPLE.read_text())["metadata"]["namespace"]
    ensure(crds, "Namespace", namespace)
    result = crds.kubectl("apply", "--server-side", "-f", str(KEDA_EXAMPLE))
    assert "scaledobject.keda.sh/vllm-llama serverside-applied" in result.stdout


def test_a_misspelt_field_is_rejected(crds: Cluster, tmp_path: Path) -> None:
    monitor = find(render(OVERLAYS["kube-prometheus-stack"]), "PodMonitor", "llm-exporter-node")
    monitor["spec"]["podMetricsEndpoints"][0]["honorlabels"] = True
    path = tmp_path / "podmonitor.yaml"
    path.write_text(yaml.safe_dump(monitor))
    result = crds.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(path), check=False)
    assert result.returncode != 0 and "honorlabels" in result.stderr, result.stdout + result.stderr


def helm_admin(api: Cluster, *args: str) -> str:
    """helm as the cluster admin, its cache, config and data in the test's folder; stdout, or a failure."""
    homes = {f"HELM_{kind}_HOME": str(api.workdir / "helm" / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")}
    result = helm(*args, "--kubeconfig", str(api.admin_kubeconfig), env={**os.environ, **homes})
    assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stderr}"
    return result.stdout


@pytest.mark.parametrize("values", ["default", "custom", "plain-prometheus", "kube-prometheus-stack"])
def test_helm_install_dry_run_server(crds: Cluster, values: str) -> None:
    """In a namespace and under a name of its own, so nothing the overlays applied is in the way."""
    namespace = f"helm-{values}"
    args = ["install", f"lie-{values}", str(CHART), "--namespace", namespace, "--dry-run=server"]
    args += ["--set", f"fullname=helm-{values}"]  # --set wins over every values file
    if values != "default":
        args += ["--values", str(CHART / "ci" / f"{values}-values.yaml")]
    if values != "custom":  # custom creates its namespace (namespace.create)
        ensure(crds, "Namespace", namespace)
    out = helm_admin(crds, *args)
    manifest = [doc for doc in yaml.safe_load_all(out.split("MANIFEST:", 1)[1].split("NOTES:")[0]) if doc]
    assert {o["kind"] for o in manifest} >= {"DaemonSet", "ClusterRole"}


def test_helm_installs_upgrades_and_uninstalls(crds: Cluster) -> None:
    """For real: the objects exist afterwards, a config change rolls the pod template, uninstall removes all."""
    namespace, release = "helm-real", "lie-real"
    ensure(crds, "Namespace", namespace)
    common = ["--namespace", namespace, "--set", "fullname=helm-real"]
    helm_admin(crds, "install", release, str(CHART), *common)
    selector = f"app.kubernetes.io/instance={release}"

    def stored(kind: str) -> list[Obj]:
        out = crds.kubectl("get", kind, "-A", "-l", selector, "-o", "json").stdout
        items: list[Obj] = json.loads(out)["items"]
        return items

    rendered = {(o["kind"], o["metadata"]["name"]) for o in template(sets=("fullname=helm-real",), release=release)}
    kinds = "daemonset,deployment,service,serviceaccount,configmap,podmonitor,servicemonitor,prometheusrule"
    found = {(o["kind"], o["metadata"]["name"]) for o in stored(kinds + ",clusterrole,clusterrolebinding")}
    assert found == rendered

    def checksum() -> str:
        value: str = stored("daemonset")[0]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return value

    before = checksum()
    helm_admin(crds, "upgrade", release, str(CHART), *common, "--set", "node.config.engines.timeout_seconds=5")
    assert checksum() != before
    helm_admin(crds, "uninstall", release, "--namespace", namespace, "--wait")
    assert stored(kinds + ",clusterrole,clusterrolebinding") == []


def test_the_shipped_workloads_are_admitted_and_run(crds: Cluster) -> None:
    """Past admission (Pod Security of the namespace, RuntimeClass) and the real scheduler: the node pod runs
    on the GPU node despite its taint, the cluster pod on the other one (kwok plays the kubelets)."""
    crds.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(OVERLAYS["kube-prometheus-stack"]))
    # what the GPU Operator installs; the DaemonSet's runtimeClassName is rejected without it
    crds.apply(
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}
    )
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    crds.add_node("kwok-gpu-0", capacity={"nvidia.com/gpu": "8"}, labels={"nvidia.com/gpu.present": "true"},
                  taints=[gpu_taint])  # fmt: skip
    crds.add_node("kwok-cpu-0")

    def running() -> dict[str, str]:
        out = crds.kubectl("get", "pods", "-n", "llm-exporter", "-o", "json").stdout
        pods = json.loads(out)["items"]
        placed = {
            p["metadata"]["labels"]["app.kubernetes.io/component"]: p["spec"].get("nodeName", "")
            for p in pods
            if p["status"].get("phase") == "Running"
        }
        return placed if len(placed) == 2 else {}

    placed = wait_for(running, 120, "both exporter pods Running")
    assert placed == {"node": "kwok-gpu-0", "cluster": "kwok-cpu-0"}
