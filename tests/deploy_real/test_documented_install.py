"""The Helm install the pages document, run as written against a real control plane whose Pod Security
admission enforces "baseline" by default, as hardened and managed clusters do: the namespace it leaves
is labelled privileged, and the node pod with its hostPath volumes is admitted and runs on a GPU node.

The same cluster shows what the labels are for: `helm install --create-namespace` alone succeeds, yet the
node DaemonSet gets no pod. And it holds the chart README's and install guide's words on `namespace.create`.

A control plane of its own (the package's shared one enforces nothing by default, and its tests install
the same cluster-scoped names)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.deploy.helm import CHART
from tests.deploy.manifests import ROOT, Obj
from tests.kubecluster import Cluster, start_cluster, wait_for
from tests.peers import peer

PAGES = {
    "README": ROOT / "README.md",
    "chart README": CHART / "README.md",
    "install guide": ROOT / "docs" / "install.md",
}
NAMESPACE = RELEASE = "llm-exporter"
PRIVILEGED = "pod-security.kubernetes.io/enforce"
# PodSecurity's cluster-wide defaults: what a namespace without labels gets (upstream's default is privileged)
ADMISSION = {
    "apiVersion": "apiserver.config.k8s.io/v1",
    "kind": "AdmissionConfiguration",
    "plugins": [
        {
            "name": "PodSecurity",
            "configuration": {
                "apiVersion": "pod-security.admission.config.k8s.io/v1",
                "kind": "PodSecurityConfiguration",
                "defaults": {"enforce": "baseline", "enforce-version": "latest"},
                "exemptions": {"namespaces": ["kube-system"]},
            },
        }
    ],
}
NOT_LABELLED = f"Namespace {NAMESPACE} is not labelled {PRIVILEGED}=privileged"


def install_blocks(page: Path) -> list[str]:
    """The sh blocks of a page that run `helm install`: the commands a reader copies."""
    shown = re.findall(r"```sh\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    return [block for block in shown if re.search(r"^helm install ", block, flags=re.M)]


def commands(block: str) -> list[str]:
    """Each command of a block, continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n\s*", "", block)
    return [line.split(" #")[0].strip() for line in joined.splitlines() if line.strip()]


DOCUMENTED: dict[str, list[str]] = {}  # block -> the pages showing it
for _name, _page in PAGES.items():
    for _block in install_blocks(_page):
        DOCUMENTED.setdefault(_block, []).append(_name)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("baseline-cluster")
    admission = workdir / "admission.yaml"
    admission.write_text(yaml.safe_dump(ADMISSION))
    tuning = {"kube-apiserver": {"admission-control-config-file": str(admission)}}
    with start_cluster(workdir / "control-plane", tuning) as api:
        api.kubectl("apply", "--server-side", "-f", str(ROOT / "tests" / "fixtures" / "crds"))  # Prometheus Operator
        wait_for(
            lambda: api.kubectl("wait", "--for=condition=Established", "crd", "--all", check=False).returncode == 0,
            60,
            "CRDs established",
            interval=0.5,
        )
        # what the GPU Operator installs and labels: the DaemonSet's runtimeClassName and node selector need them
        api.apply(
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": "nvidia"},
                "handler": "nvidia",
            }
        )
        taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
        api.add_node("kwok-gpu-0", capacity={"nvidia.com/gpu": "8"}, labels={"nvidia.com/gpu.present": "true"},
                     taints=[taint])  # fmt: skip
        api.add_node("kwok-cpu-0")
        yield api


def shell(api: Cluster, script: str) -> subprocess.CompletedProcess[str]:
    """Run commands as a reader would, in a clone, with `kubectl` and `helm` on PATH (the pinned peers)."""
    tools = api.workdir / "path"
    tools.mkdir(exist_ok=True)
    for name in ("kubectl", "helm"):
        if not (tools / name).exists():
            (tools / name).symlink_to(peer(name))
    homes = {f"HELM_{kind}_HOME": str(api.workdir / "helm" / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")}
    env = {**os.environ, **homes, "PATH": f"{tools}:{os.environ['PATH']}", "KUBECONFIG": str(api.admin_kubeconfig)}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def clean(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster without the release and its namespace afterwards, for the next test."""
    yield cluster
    shell(cluster, f"helm uninstall {RELEASE} -n {NAMESPACE} --wait || true")
    cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", timeout=180)
    # what a block applied by other means than Helm (kustomize's objects carry the same label)
    part_of = "app.kubernetes.io/part-of=llm-inference-exporter"
    cluster.kubectl("delete", "clusterroles,clusterrolebindings", "-l", part_of, "--ignore-not-found")


def namespace_labels(api: Cluster) -> dict[str, str]:
    labels: dict[str, str] = json.loads(api.kubectl("get", "namespace", NAMESPACE, "-o", "json").stdout)[
        "metadata"
    ].get("labels", {})
    return labels


def node_pod_admission(api: Cluster) -> subprocess.CompletedProcess[str]:
    """A pod of the installed node DaemonSet's template, created with a server-side dry run: Pod Security's
    verdict, which the DaemonSet controller would otherwise only record as an event."""
    daemonset: Obj = json.loads(
        api.kubectl("get", "daemonset", f"{RELEASE}-node", "-n", NAMESPACE, "-o", "json").stdout
    )
    template = daemonset["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "admission-check", "namespace": NAMESPACE, "labels": template["metadata"]["labels"]},
        "spec": template["spec"],
    }
    return api.kubectl("create", "--dry-run=server", "-f", "-", input_text=json.dumps(pod), check=False)


def test_every_page_shows_the_helm_install() -> None:
    for name, page in PAGES.items():
        assert install_blocks(page), f"{name}: no sh block runs `helm install`"
    for block in DOCUMENTED:
        for command in commands(block):
            # nothing else: the test runs these, and a reader copies them
            assert command.split()[0] in ("kubectl", "helm"), command


@pytest.mark.slow
@pytest.mark.parametrize("block", list(DOCUMENTED), ids=["+".join(pages) for pages in DOCUMENTED.values()])
def test_the_documented_install_labels_the_namespace_and_the_node_pod_runs(clean: Cluster, block: str) -> None:
    result = shell(clean, block)
    assert result.returncode == 0, result.stdout + result.stderr
    assert namespace_labels(clean).get(PRIVILEGED) == "privileged"
    assert NOT_LABELLED not in result.stdout  # the chart's NOTES saw the label
    admitted = node_pod_admission(clean)
    assert admitted.returncode == 0, admitted.stderr

    def running() -> dict[str, str]:
        pods = json.loads(clean.kubectl("get", "pods", "-n", NAMESPACE, "-o", "json").stdout)["items"]
        placed = {
            p["metadata"]["labels"]["app.kubernetes.io/component"]: p["spec"].get("nodeName", "")
            for p in pods
            if p["status"].get("phase") == "Running"
        }
        return placed if len(placed) == 2 else {}

    assert wait_for(running, 120, "both exporter pods Running") == {"node": "kwok-gpu-0", "cluster": "kwok-cpu-0"}


@pytest.mark.slow
def test_create_namespace_alone_installs_but_the_node_pods_are_rejected(clean: Cluster) -> None:
    result = shell(clean, f"helm install {RELEASE} charts/llm-inference-exporter -n {NAMESPACE} --create-namespace")
    assert result.returncode == 0, result.stderr  # nothing tells the reader, but the NOTES
    assert PRIVILEGED not in namespace_labels(clean)
    assert NOT_LABELLED in result.stdout
    rejected = node_pod_admission(clean)
    assert rejected.returncode != 0
    assert 'violates PodSecurity "baseline:latest": hostPath volumes' in rejected.stderr, rejected.stderr

    def failed_create() -> str:
        out = clean.kubectl("get", "events", "-n", NAMESPACE, "--field-selector", "reason=FailedCreate", "-o", "json")
        messages = [e["message"] for e in json.loads(out.stdout)["items"]]
        return next((m for m in messages if "violates PodSecurity" in m), "")

    assert "hostPath volumes" in wait_for(failed_create, 60, "the DaemonSet controller's FailedCreate")


@pytest.mark.slow
def test_namespace_create_works_only_with_create_namespace(clean: Cluster) -> None:
    """As the chart README and the install guide say: alone a failure; with `--create-namespace` (Helm 4) the
    namespace is labelled, and `helm uninstall` removes everything but exits 1."""
    install = f"helm install {RELEASE} charts/llm-inference-exporter -n {NAMESPACE} --set namespace.create=true"
    alone = shell(clean, install)
    assert alone.returncode != 0
    assert f'namespaces "{NAMESPACE}" not found' in alone.stderr, alone.stderr

    result = shell(clean, install + " --create-namespace")
    assert result.returncode == 0, result.stderr
    assert namespace_labels(clean).get(PRIVILEGED) == "privileged"
    assert node_pod_admission(clean).returncode == 0
    # the release owns the Namespace: uninstalling deletes it, and Helm's record in it before Helm can
    uninstall = shell(clean, f"helm uninstall {RELEASE} -n {NAMESPACE} --wait")
    assert uninstall.returncode == 1
    assert "Failed to purge the release: release: not found" in uninstall.stderr, uninstall.stderr
    gone = clean.kubectl("get", "namespace", NAMESPACE, "-o", "jsonpath={.status.phase}", check=False)
    assert gone.returncode != 0 or gone.stdout == "Terminating", gone.stdout
    selector = f"app.kubernetes.io/instance={RELEASE}"
    assert clean.kubectl("get", "clusterroles,clusterrolebindings", "-l", selector, "-o", "name").stdout == ""
