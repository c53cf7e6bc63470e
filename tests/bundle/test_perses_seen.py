"""The Perses dashboard seen: the Perses server with its web UI (v0.54.0, built from its published sources by
scripts/build-perses-ui.sh) serves the generated dashboard against a real Prometheus scraping the exporter in
front of the replayed real vLLM and LiteLLM bodies (tests/bundle/perses_scene.py), and Debian's headless
Chromium renders it. No panel may show an error; a panel may show "No data" only where this scene has no
series for it, each listed below with the reason."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bundle import perses_ui
from tests.bundle.perses_scene import dashboard, scene

pytestmark = pytest.mark.slow

NO_GPU = "no GPU: the scene's node role runs without NVML, so no llm_gpu_* series"
NO_CLUSTER = "no Kubernetes: the scene runs no cluster role, so no node, pod, replica or workload series"
NO_PRICE = "no GPU and no cluster role: cost needs the GPUs a model holds and their prices"
# panel title -> why this scene has no series for it; every other panel must show data
NO_DATA = {
    "Routes that buffer": NO_CLUSTER + " (llm_route_buffering is read from the routes)",
    "Bottleneck": NO_GPU + " (llm:bottleneck joins the model's GPUs through llm_gpu_pod_info)",
    "GPU memory used and total": NO_GPU,
    "Memory bandwidth used vs peak": NO_GPU,
    "Memory bandwidth by model": NO_GPU,
    "GPU utilisation": NO_GPU,
    "Pod per GPU": NO_GPU,
    "XID and ECC errors": NO_GPU,
    "Row remapping": NO_GPU,
    "GPU memory per pod and outside pods": NO_GPU,
    "Assigned GPUs left idle": NO_GPU,
    "Free GPUs per node": NO_CLUSTER,
    "Free GPUs vs largest free block": NO_CLUSTER,
    "Pending GPU pods by reason": NO_CLUSTER,
    "Cold start by phase": NO_CLUSTER,
    "Replicas ready and starting": NO_CLUSTER,
    "Autoscaler replicas": NO_CLUSTER,
    "Autoscaler held at a limit": NO_CLUSTER,
    "GPUs withdrawn by the device plugin": NO_CLUSTER,
    "Failing deployment checks": NO_CLUSTER,
    "Failing checks": NO_CLUSTER,
    "Tokens per second per GPU": NO_GPU,
    "MFU and MBU per model": NO_GPU,
    "Cost per million tokens and idle GPU-hours": NO_PRICE,
    "Top tenants by cost": NO_PRICE,
    "Share of GPU time per tenant": NO_PRICE,
    "Cost per million tokens per tenant": NO_PRICE,
    "Requests queued at the gateway, by tenant": "no endpoint picker: the scene's gateway is LiteLLM, which has no "
    "flow control queue (llm_gateway_queued_requests is read from the EPP only)",
}


# Chromium's virtual-time budget may end, on a loaded machine, before a chart has drawn its legend: that chart
# then reads as empty. The scene only grows, so a panel seen with data in one render has data; an error seen in
# any render stands. A panel is judged empty only when it stayed empty through every render.
RENDERS = 3
_RANK = {"no data": 0, "data": 1}


def _merged(first: dict[str, str], second: dict[str, str]) -> dict[str, str]:
    return {t: max(first.get(t, "no data"), second.get(t, "no data"), key=lambda s: _RANK.get(s, 2)) for t in first}


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("perses-seen")
    with scene(tmp) as perses:
        page = perses_ui.publish(perses, dashboard(), "overview")
        seen = perses_ui.panel_states(perses_ui.dom(page))
        for _ in range(RENDERS - 1):
            if {t for t, s in seen.items() if s == "no data"} <= set(NO_DATA):
                break
            seen = _merged(seen, perses_ui.panel_states(perses_ui.dom(page)))
        yield seen


def test_every_panel_of_the_dashboard_is_rendered(states: dict[str, str]) -> None:
    doc = dashboard()
    titles = sorted(p["spec"]["display"]["name"] for p in doc["spec"]["panels"].values())
    assert sorted(states) == titles


def test_no_panel_shows_an_error(states: dict[str, str]) -> None:
    assert {t: s for t, s in states.items() if s.startswith("error")} == {}


def test_no_data_only_where_the_scene_has_no_series(states: dict[str, str]) -> None:
    assert sorted(t for t, s in states.items() if s == "no data") == sorted(NO_DATA), states
