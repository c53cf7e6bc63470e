"""Without the KEDA CRDs the watchdog's KEDA watches are synced, empty and reported unavailable (the loopback
API server answers 404 for keda.sh, as a real one does before KEDA is installed); pods stand for a served kind."""

from __future__ import annotations

from pathlib import Path

from exporter.sources.kube_connect import connect
from exporter.sources.kube_reflector import Reflector
from exporter.watchdog import model
from tests.fakes.kube_api import FakeKubeAPI


def test_absent_keda_crds_read_as_unavailable_not_as_a_failure(tmp_path: Path) -> None:
    api = FakeKubeAPI()
    api.start()
    try:
        client = connect(api.write_kubeconfig(tmp_path / "kubeconfig"))
        absent = Reflector(client, "scaledobjects", transform=model.scaler_queries("ScaledObject"), optional=True)
        served = Reflector(client, "pods", transform=lambda o: o)
        for reflector in (absent, served):
            reflector.start()
        try:
            assert absent.wait_synced(10) and served.wait_synced(10)
            assert absent.items() == {}
            assert absent.available() is False
            assert served.available() is True
        finally:
            absent.stop()
            served.stop()
    finally:
        api.stop()
