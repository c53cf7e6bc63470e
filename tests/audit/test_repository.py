"""The command on the repository's own manifests as they ship: `helm template` of the chart and `kustomize
build` of the overlays (the real helm and kubectl). They deploy the exporter, not an engine: nothing to audit,
and the command says so (exit 2) instead of passing silently."""

from __future__ import annotations

import subprocess

import pytest

from tests.audit.test_command import ROOT, audit
from tests.deploy.helm import CHART, NAMESPACE, helm
from tests.peers import peer

NOTHING = (
    "audit: no engine workload found (1 Deployment/StatefulSet/LeaderWorkerSet read: "
    "llm-exporter/Deployment/llm-exporter-cluster; none runs an engine"
)


@pytest.mark.parametrize("values", ["", "ci/kube-prometheus-stack-values.yaml", "ci/plain-prometheus-values.yaml"])
def test_helm_template_of_the_chart(values: str) -> None:
    args = ["template", "llm-exporter", str(CHART), "--namespace", NAMESPACE]
    rendered = helm(*args, *(["--values", str(CHART / values)] if values else []))
    assert rendered.returncode == 0, rendered.stderr
    rc, out, err = audit("-f", "-", stdin=rendered.stdout)
    assert (rc, out) == (2, "")
    assert err.startswith(NOTHING), err  # every kind in the chart is known: no note before it


@pytest.mark.parametrize("overlay", ["kube-prometheus-stack", "plain-prometheus"])
def test_kustomize_build_of_the_overlays(overlay: str) -> None:
    built = subprocess.run(
        [peer("kubectl"), "kustomize", str(ROOT / "deploy" / "overlays" / overlay)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    rc, out, err = audit("-f", "-", stdin=built.stdout)
    assert (rc, out) == (2, "")
    assert err.startswith(NOTHING), err
