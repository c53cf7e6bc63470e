"""The cluster role end to end: real `kubernetes` client, fake API server, the collector as the server runs it.

The fake stays for what the real API server does not do on demand: an ERROR 410 on an open watch, DRA not
served, no configuration, a slow server. Placement against the real scheduler, DRA allocation, compaction
and restarts: tests/kube_real/.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.collect import CollectorSet
from exporter.config import Cluster
from exporter.demo.vllm_env import free_port
from exporter.exposition import render
from exporter.kube.collector import build_cluster_collectors
from tests.fakes.kube_api import FakeKubeAPI
from tests.kube.objects import container, node, pod, resource_claim, resource_slice, taint
from tests.kube.waiting import eventually

FAST = {"watch_timeout_seconds": 5.0, "backoff_initial_seconds": 0.05, "backoff_max_seconds": 0.2}
G, MIG = "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(collectors: CollectorSet) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(render(collectors.collect())):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def pending(samples: Samples) -> dict[str, str]:
    return {
        dict(labels)["pod"]: dict(labels)["reason"]
        for (name, labels), _ in samples.items()
        if name == "llm_pending_pod_gpus_requested"
    }


def cluster_objects() -> list[dict[str, Any]]:
    objects = [node(f"gpu-{i}", 8) for i in range(4)]
    objects += [pod(f"train-{i}", used, namespace="batch", node=f"gpu-{i}") for i, used in enumerate((6, 6, 7, 7))]
    objects += [
        pod("vllm-big-0", 4, namespace="demo"),  # 2/2/1/1 free: fragmented
        node("cordoned", 8, unschedulable=True),
        node("notready", 8, ready=False),
        node("tainted", 3, taints=[taint("dedicated", value="llm")]),
        pod("tolerant-0", 3, namespace="demo", tolerations=[{"key": "dedicated", "value": "llm"}]),
        pod("intolerant-0", 3, namespace="demo", node_selector={"kubernetes.io/hostname": "tainted"}),
        node("init", 4),
        pod("init-0", node="init", containers=[container("main", 1)], init_containers=[container("load", 3)]),
        pod("done-0", 4, namespace="batch", node="init", phase="Succeeded"),
        pod("bound-0", 1, namespace="demo", node="init", phase="Pending"),
        node("mig", {MIG: 7}),
        pod("mig-0", 2, resource=MIG, node="mig"),
        node("dra"),
        resource_slice("dra", 4),
        resource_claim("dra-job-gpus", count=1, allocated=[("gpu.nvidia.com", "dra", "gpu-0")]),
    ]
    return objects


@pytest.fixture
def collectors(fake_api: FakeKubeAPI, kubeconfig: str) -> Iterator[CollectorSet]:
    for obj in cluster_objects():
        fake_api.apply(obj)
    collectors = CollectorSet(build_cluster_collectors(Cluster(page_size=3), kubeconfig, **FAST))
    collectors.start()
    yield collectors
    collectors.close()


def test_the_cluster_view(collectors: CollectorSet) -> None:
    eventually(collectors.ready)
    s = scrape(collectors)
    assert value(s, "llm_exporter_collector_success", collector="cluster") == 1
    assert value(s, "llm_node_gpus_free", node="gpu-0", resource=G) == 2
    assert value(s, "llm_node_gpus_free", node="init", resource=G) == 0  # init max 3 + bound-pending 1
    assert value(s, "llm_node_gpus_allocated", node="init", resource=G) == 4  # the Succeeded pod holds nothing
    assert value(s, "llm_node_gpus_free", node="mig", resource=MIG) == 5
    assert value(s, "llm_node_gpus_free", node="dra", resource="gpu.nvidia.com") == 3
    assert value(s, "llm_node_schedulable", node="cordoned") == 0
    assert value(s, "llm_node_schedulable", node="notready") == 0
    assert value(s, "llm_cluster_gpus_free", resource=G) == 2 + 2 + 1 + 1 + 3  # cordoned/notready left out
    assert value(s, "llm_cluster_gpus_largest_free_block", resource=G) == 3
    assert pending(s) == {"vllm-big-0": "fragmented", "tolerant-0": "backoff", "intolerant-0": "constrained"}
    assert (
        value(s, "llm_pending_pod_gpus_requested", namespace="demo", pod="vllm-big-0", resource=G, reason="fragmented")
        == 4
    )
    assert value(s, "llm_kubernetes_objects", resource="pods") == 10  # done-0 (Succeeded) is filtered out
    assert time.time() - (value(s, "llm_kubernetes_last_sync_timestamp_seconds") or 0) < 5


def test_events_change_the_answer(fake_api: FakeKubeAPI, collectors: CollectorSet) -> None:
    eventually(collectors.ready)
    fake_api.apply(pod("train-0", 6, namespace="batch", node="gpu-0", phase="Succeeded"))  # 8 free on gpu-0
    eventually(lambda: pending(scrape(collectors)).get("vllm-big-0") == "backoff")
    fake_api.apply(node("gpu-0", 8, unschedulable=True))  # cordoned: 2+1+1 = 4 left elsewhere
    eventually(lambda: pending(scrape(collectors)).get("vllm-big-0") == "fragmented")
    fake_api.apply(pod("vllm-big-0", 4, namespace="demo", node="gpu-0"))  # bound by the scheduler after all
    eventually(lambda: "vllm-big-0" not in pending(scrape(collectors)))
    assert value(scrape(collectors), "llm_node_gpus_allocated", node="gpu-0", resource=G) == 4
    fake_api.delete("pods", "demo", "tolerant-0")
    fake_api.apply(resource_claim("dra-job-gpus", count=1))  # deallocated
    eventually(lambda: "tolerant-0" not in pending(scrape(collectors)))
    eventually(lambda: value(scrape(collectors), "llm_node_gpus_free", node="dra", resource="gpu.nvidia.com") == 4)


def test_recovers_from_410_and_from_an_api_server_restart(fake_api: FakeKubeAPI, collectors: CollectorSet) -> None:
    eventually(collectors.ready)
    eventually(lambda: sum("watch=true" in p for p in fake_api.requests) >= 4)
    fake_api.compact()
    fake_api.apply(pod("vllm-huge-0", 64, namespace="demo"))
    eventually(lambda: pending(scrape(collectors)).get("vllm-huge-0") == "insufficient")
    assert (value(scrape(collectors), "llm_kubernetes_relists_total", resource="pods") or 0) >= 1

    fake_api.stop()
    fake_api.delete("pods", "demo", "vllm-huge-0")  # while the API server is away
    time.sleep(0.6)
    s = scrape(collectors)
    assert "vllm-huge-0" in pending(s)  # the last known view is still served ...
    assert time.time() - (value(s, "llm_kubernetes_last_sync_timestamp_seconds") or 0) >= 0.5  # ... and says its age
    fake_api.start()
    eventually(lambda: "vllm-huge-0" not in pending(scrape(collectors)))
    assert collectors.ready()


def test_not_ready_until_the_first_full_sync(tmp_path: Path) -> None:
    api = FakeKubeAPI(port=free_port(), bookmark_interval=0.2)
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    for obj in cluster_objects():
        api.apply(obj)
    collectors = CollectorSet(build_cluster_collectors(Cluster(), kubeconfig, **FAST))
    collectors.start()
    try:
        time.sleep(0.3)
        assert not collectors.ready()
        s = scrape(collectors)
        assert value(s, "llm_exporter_collector_success", collector="cluster") == 0
        assert not any(name.startswith("llm_node_") for name, _ in s)
        api.start()
        eventually(collectors.ready)
        assert value(scrape(collectors), "llm_exporter_collector_success", collector="cluster") == 1
    finally:
        collectors.close()
        api.stop()


def test_dra_not_served_does_not_block_readiness(fake_api: FakeKubeAPI, kubeconfig: str) -> None:
    fake_api.apply(node("gpu-0", 8))
    fake_api.fail_next(1, status=404, path_contains="resourceslices")
    fake_api.fail_next(1, status=403, path_contains="resourceclaims")
    collectors = CollectorSet(build_cluster_collectors(Cluster(), kubeconfig, **FAST))
    collectors.start()
    try:
        eventually(collectors.ready)
        assert value(scrape(collectors), "llm_cluster_gpus_free", resource=G) == 8
    finally:
        collectors.close()


def test_no_kubernetes_configuration_is_reported_not_raised(tmp_path: Path) -> None:
    collectors = CollectorSet(build_cluster_collectors(Cluster(), str(tmp_path / "missing")))
    assert not collectors.ready()
    assert value(scrape(collectors), "llm_exporter_collector_success", collector="cluster") == 0


def test_a_slow_api_server_never_slows_a_scrape(fake_api: FakeKubeAPI, kubeconfig: str) -> None:
    for obj in cluster_objects():
        fake_api.apply(obj)
    fake_api.delay_seconds = 0.3  # every page and watch answer: an overloaded API server
    collectors = CollectorSet(build_cluster_collectors(Cluster(page_size=3), kubeconfig, **FAST))
    collectors.start()
    try:
        slowest = 0.0
        while not collectors.ready():
            start = time.monotonic()
            s = scrape(collectors)
            slowest = max(slowest, time.monotonic() - start)
            assert value(s, "llm_exporter_collector_success", collector="cluster") == 0  # says it is not synced
            time.sleep(0.1)
        assert slowest < 0.25, "a scrape reads the last view; it never waits on the API server"
        assert pending(scrape(collectors))["vllm-big-0"] == "fragmented"
        fake_api.apply(pod("vllm-huge-0", 64, namespace="demo"))  # events still arrive, late
        eventually(lambda: pending(scrape(collectors)).get("vllm-huge-0") == "insufficient")
    finally:
        collectors.close()
