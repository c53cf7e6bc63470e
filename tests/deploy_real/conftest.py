"""One real control plane per test module (starting it takes a few seconds; the tests add objects only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deploy.manifests import ROOT
from tests.deploy_real.apiserver import APIServer, control_plane
from tests.kube.waiting import eventually

# the published CRDs of the kinds the manifests create or the cluster role watches
CRDS = (ROOT / "tests" / "fixtures" / "crds", ROOT / "tests" / "fixtures" / "gateway-api")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServer]:
    with control_plane(tmp_path_factory.mktemp("control-plane")) as server:
        yield server


@pytest.fixture(scope="module")
def crds(api: APIServer) -> APIServer:
    """The control plane with the published Prometheus Operator, KEDA and Gateway API CRDs served."""
    for folder in CRDS:
        api.kubectl("apply", "--server-side", "-f", str(folder))  # the .yaml files; READMEs are skipped
    # `kubectl wait` errors on a CRD whose status has no conditions yet, which a fresh one may lack
    eventually(
        lambda: api.kubectl("wait", "--for=condition=Established", "crd", "--all", check=False).returncode == 0,
        timeout=60,
        interval=0.5,
    )
    return api
