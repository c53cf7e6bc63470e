"""One real control plane (tests/kubecluster.py) for the tests of this package, of their own: they apply
the shipped manifests into llm-exporter and add cluster-scoped objects (CRDs, ClusterRoles, a node), which
the session's shared cluster should not see."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deploy.manifests import ROOT
from tests.kubecluster import Cluster, start_cluster, wait_for

# the published CRDs of the kinds the manifests create or the cluster role watches
# and those the deployment checks watch where they are installed (LeaderWorkerSet, AIBrix, OpenShift, GIE,
# the serving operators')
CRDS = tuple(
    ROOT / "tests" / "fixtures" / d
    for d in ("crds", "operator_crds", "gateway-api", "lws", "aibrix", "openshift", "inference-extension")
)


@pytest.fixture(scope="package")
def api(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    with start_cluster(tmp_path_factory.mktemp("control-plane")) as cluster:
        failed_before = request.session.testsfailed
        yield cluster
        if request.session.testsfailed > failed_before:
            print(f"\ncontrol plane logs:\n{cluster.logs()}")


@pytest.fixture(scope="package")
def crds(api: Cluster) -> Cluster:
    """The control plane with the published Prometheus Operator, KEDA, Gateway API, LeaderWorkerSet, AIBrix
    PodAutoscaler, OpenShift Route, InferencePool and serving operators' CRDs served."""
    for folder in CRDS:
        api.kubectl("apply", "--server-side", "-f", str(folder))  # the .yaml files; READMEs are skipped
    # `kubectl wait` errors on a CRD whose status has no conditions yet, which a fresh one may lack
    wait_for(
        lambda: api.kubectl("wait", "--for=condition=Established", "crd", "--all", check=False).returncode == 0,
        60,
        "CRDs established",
        interval=0.5,
    )
    return api
