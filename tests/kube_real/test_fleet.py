"""The cluster role on a fleet (tests/fleet.py): 100 kwok nodes in GPU pools and 3,000 pods of engine and
other Deployments on a control plane of its own, against the API's account of the same objects. Every
node is reported, the pending GPU pods are exactly those the API holds unbound, each with the reason DESIGN
gives it (tests/fleet_reasons.py), and each node's allocated and free GPUs are the API's; again after churn
(replicas deleted and re-created, nodes cordoned). The replicas designed to be fragmented are."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.collect import CollectorSet
from exporter.config import Config
from exporter.exposition import render
from exporter.roles import build
from tests import fleet
from tests.kubecluster import Cluster, start_cluster, wait_for

NODES, PODS = 100, 3000
SHAPE = fleet.Fleet.scaled(NODES, PODS)
SETTLE_TIMEOUT = 240.0


@pytest.fixture(scope="module")
def fleet_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    workdir = Path(tempfile.mkdtemp(prefix="fleet-"))
    with start_cluster(workdir, fleet.TUNING) as cluster:
        failed_before = request.session.testsfailed
        fleet.build(cluster, SHAPE, httproutes=False, timeout=SETTLE_TIMEOUT)
        yield cluster
        if request.session.testsfailed > failed_before:
            print(f"\ncontrol plane logs ({workdir}):\n{cluster.logs()}")


@pytest.fixture(scope="module")
def role(fleet_cluster: Cluster) -> Iterator[CollectorSet]:
    """The cluster role's collectors as `serve --role cluster` builds them, with the default configuration."""
    collectors = build("cluster", Config(), str(fleet_cluster.admin_kubeconfig))
    collectors.start()
    wait_for(collectors.ready, 120, "cluster role ready")
    yield collectors
    collectors.close()


Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(collectors: CollectorSet) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(render(collectors.collect())):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def per_node(samples: Samples, name: str) -> dict[str, int]:
    return {labels["node"]: int(v) for labels, v in samples.get(name, []) if labels["resource"] == fleet.GPU}


def disagreements(samples: Samples, truth: fleet.Account) -> list[str]:
    """What the exported view says differently from the API (empty: they agree)."""
    out = []
    reported = {labels["node"] for labels, _ in samples.get("llm_node_schedulable", [])}
    if reported != truth.nodes:
        out.append(
            f"nodes: {len(reported)} reported, {len(truth.nodes)} in the API, {sorted(reported ^ truth.nodes)[:5]}"
        )
    for name, expected in (
        ("llm_node_gpus_allocatable", truth.allocatable),
        ("llm_node_gpus_allocated", {n: truth.allocated.get(n, 0) for n in truth.allocatable}),
        ("llm_node_gpus_free", truth.free),
    ):
        got = per_node(samples, name)
        if got != expected:
            wrong = sorted(n for n in expected.keys() | got.keys() if got.get(n) != expected.get(n))
            out.append(
                f"{name}: {len(wrong)} nodes differ, e.g. {[(n, got.get(n), expected.get(n)) for n in wrong[:3]]}"
            )
    counted = sum(v for labels, v in samples.get("llm_cluster_pending_pods", []) if labels["resource"] == fleet.GPU)
    named = {
        (labels["namespace"], labels["pod"])
        for labels, _ in samples.get("llm_pending_pod_gpus_requested", [])
        if labels["resource"] == fleet.GPU
    }
    if counted != len(truth.pending) or named != truth.pending:
        out.append(f"pending GPU pods: {counted} counted, {len(named)} named, {len(truth.pending)} in the API")
    said = {
        (labels["namespace"], labels["pod"]): labels["reason"]
        for labels, _ in samples.get("llm_pending_pod_gpus_requested", [])
        if labels["resource"] == fleet.GPU
    }
    differing = sorted(pod for pod in truth.reasons if said.get(pod) != truth.reasons[pod])
    if differing:
        examples = [(pod, said.get(pod), truth.reasons[pod]) for pod in differing[:3]]
        out.append(f"reasons: {len(differing)} pods differ from DESIGN's, e.g. (pod, exported, expected) {examples}")
    return out


def agree(cluster: Cluster, collectors: CollectorSet) -> fleet.Account:
    """Wait until the exported view is the API's account, read anew each time (the watch lags a little)."""
    last: list[str] = []

    def check() -> fleet.Account | None:
        nonlocal last
        truth = fleet.account(cluster)
        last = disagreements(scrape(collectors), truth)
        return None if last else truth

    try:
        return wait_for(check, 60, "exported view equal to the API's", interval=2)  # type: ignore[no-any-return]
    except AssertionError as err:
        raise AssertionError(f"{err}: {last}") from None


def test_every_node_and_pending_gpu_pod_of_the_fleet_is_reported(fleet_cluster: Cluster, role: CollectorSet) -> None:
    truth = agree(fleet_cluster, role)
    assert len(truth.nodes) == NODES and truth.pods >= PODS
    assert len(truth.pending) >= SHAPE.unplaceable  # the unplaceable replicas, and any the pools could not fit
    assert sum(truth.allocated.values()) > 0.5 * NODES * fleet.GPUS_PER_NODE


def test_the_designed_fragmented_replicas_are_fragmented(fleet_cluster: Cluster, role: CollectorSet) -> None:
    """The 8-GPU replicas of the H200 pool: 2 GPUs and under 32 cpu free on each node, the 6-GPU replicas
    holding the rest. Not `other_resources`: moving GPU pods frees cpu and GPUs together."""
    truth = agree(fleet_cluster, role)
    designed = {p: r for p, r in truth.reasons.items() if p[1].startswith(f"{fleet.FRAGMENTING}-")}
    assert list(designed.values()) == ["fragmented"] * SHAPE.fragmented
    exported = Counter(labels["reason"] for labels, _ in scrape(role)["llm_pending_pod_gpus_requested"])
    assert exported["fragmented"] >= SHAPE.fragmented


def test_the_view_follows_churn_of_pods_and_cordons(fleet_cluster: Cluster, role: CollectorSet) -> None:
    pods = fleet.list_all(fleet_cluster, "/api/v1/pods?labelSelector=app")
    doomed = [p for p in pods if p["spec"].get("nodeName")][::15]  # ~200 replicas, re-created by their ReplicaSets
    fleet.delete_all(
        fleet_cluster, [f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}" for p in doomed]
    )
    cordoned = sorted(n["metadata"]["name"] for n in SHAPE.node_objects())[:5]
    fleet.patch_all(fleet_cluster, [f"/api/v1/nodes/{n}" for n in cordoned], {"spec": {"unschedulable": True}})
    fleet.wait_settled(fleet_cluster, SHAPE, SETTLE_TIMEOUT)
    truth = agree(fleet_cluster, role)
    schedulable = {labels["node"]: v for labels, v in scrape(role)["llm_node_schedulable"]}
    assert [n for n in cordoned if schedulable[n] == 0] == cordoned
    assert len(truth.pending) >= SHAPE.unplaceable
