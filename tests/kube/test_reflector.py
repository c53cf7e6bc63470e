"""The list+watch reflector, driven through the real `kubernetes` client against the loopback fake API server.

Only for what the real API server does not do on demand: a 410 ERROR event on an open watch, an expired
continue token mid-list, dropped streams, 5xx answers, an API server absent at start, malformed objects.
A restart over a compacted etcd, relisting after it, and bookmarks are proven against the real control
plane in tests/kube_real/test_watch.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from exporter.demo.vllm_env import free_port
from exporter.sources.kube_connect import CONNECTION_POOL_SIZE, KubeConfigError, connect
from exporter.sources.kube_reflector import Reflector
from exporter.sources.kube_shared import shared
from tests.fakes.kube_api import FakeKubeAPI
from tests.kube.objects import node, pod
from tests.kube.waiting import eventually

FAST: dict[str, Any] = {"watch_timeout_seconds": 2.0, "backoff_initial_seconds": 0.05, "backoff_max_seconds": 0.2}


def gpus_of(obj: dict[str, Any]) -> int | None:
    """A transform keeping one number per node, dropping nodes without GPUs."""
    count = int(obj["status"]["allocatable"].get("nvidia.com/gpu", "0"))
    return count or None


@pytest.fixture
def reflectors() -> Iterator[list[Reflector[Any]]]:
    started: list[Reflector[Any]] = []
    yield started
    for reflector in started:
        reflector.stop()


def run(reflectors: list[Reflector[Any]], kubeconfig: str, resource: str = "nodes", **kwargs: Any) -> Reflector[Any]:
    kwargs = {"transform": gpus_of, **FAST, **kwargs}
    reflector: Reflector[Any] = Reflector(connect(kubeconfig), resource, **kwargs)
    reflectors.append(reflector)
    reflector.start()
    return reflector


def test_paginated_list_then_watch_follows_add_modify_delete(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    for i in range(7):
        fake_api.apply(node(f"n{i}", gpus=i % 3))  # n0, n3, n6 have no GPU: the transform drops them
    events: list[float] = []
    r = run(reflectors, kubeconfig, page_size=2, on_event=lambda: events.append(time.time()))
    assert r.wait_synced(5)
    assert r.items() == {"n1": 1, "n2": 2, "n4": 1, "n5": 2}
    lists = [p for p in fake_api.requests if "/api/v1/nodes" in p and "watch=true" not in p]
    assert len(lists) == 4 and sum("continue=" in p for p in lists) == 3  # 7 objects, limit 2
    assert events, "a completed list is a change of the view"

    fake_api.apply(node("n0", gpus=8))
    fake_api.apply(node("n1", gpus=0))  # modified to no GPU: dropped from the view
    fake_api.delete("nodes", "", "n2")
    eventually(lambda: r.items() == {"n0": 8, "n4": 1, "n5": 2})
    assert r.stats().relists == 0 and r.stats().watch_restarts == 0
    watch = next(p for p in fake_api.requests if "watch=true" in p)
    assert "allowWatchBookmarks=true" in watch and "timeoutSeconds=" in watch and "resourceVersion=" in watch


def test_410_after_compaction_relists_and_catches_up(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    fake_api.apply(node("a", gpus=1))
    r = run(reflectors, kubeconfig)
    assert r.wait_synced(5)
    eventually(lambda: any("watch=true" in p for p in fake_api.requests))
    fake_api.compact()  # the open watch now stands on a compacted resourceVersion: an ERROR 410 event
    fake_api.apply(node("b", gpus=2))
    eventually(lambda: r.items() == {"a": 1, "b": 2})
    eventually(lambda: r.stats().relists >= 1)


def test_expired_continue_token_restarts_the_list(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    for i in range(6):
        fake_api.apply(node(f"n{i}", gpus=1))
    compacted: list[bool] = []

    def compact_once(obj: dict[str, Any]) -> int | None:
        if not compacted:  # during the first page: its continue token expires before the second request
            compacted.append(True)
            fake_api.compact()
        return gpus_of(obj)

    r = run(reflectors, kubeconfig, transform=compact_once, page_size=4)
    assert r.wait_synced(5)
    assert len(r.items()) == 6
    assert r.stats().errors == 1  # the 410 on the continued list


def test_dropped_watch_resumes_without_relist(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    fake_api.apply(node("a", gpus=1))
    r = run(reflectors, kubeconfig)
    assert r.wait_synced(5)
    eventually(lambda: fake_api.active_watches >= 1)  # the stream is open, so the drop really cuts it
    fake_api.drop_watches()
    fake_api.apply(node("a", gpus=4))
    eventually(lambda: r.items() == {"a": 4})
    eventually(lambda: r.stats().watch_restarts >= 1)
    assert r.stats().relists == 0  # the resourceVersion was still valid: resumed, not relisted


def test_api_server_down_at_start_then_up(tmp_path: Path, reflectors: list[Reflector[Any]]) -> None:
    api = FakeKubeAPI(port=free_port(), bookmark_interval=0.2)
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    api.apply(node("a", gpus=2))
    r = run(reflectors, kubeconfig)
    time.sleep(0.3)
    assert not r.synced() and r.last_sync_timestamp() is None
    api.start()
    try:
        assert r.wait_synced(5)
        assert r.items() == {"a": 2}
        assert r.stats().errors >= 1
    finally:
        api.stop()


def test_server_errors_are_retried(fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]) -> None:
    fake_api.apply(node("a", gpus=1))
    fake_api.fail_next(3, status=500, path_contains="/nodes")
    r = run(reflectors, kubeconfig)
    assert r.wait_synced(5)
    assert r.items() == {"a": 1} and r.stats().errors == 3


def test_optional_resource_not_served_counts_as_empty_and_synced(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    fake_api.fail_next(1, status=404, path_contains="resourceslices")
    r = run(reflectors, kubeconfig, "resourceslices", transform=lambda obj: obj["spec"]["driver"], optional=True)
    assert r.wait_synced(5)
    assert r.items() == {}


def test_field_selector_objects_leaving_it_are_deleted(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    fake_api.apply(pod("vllm-0", 1, namespace="ml", node="n1"))
    fake_api.apply(pod("vllm-1", 1, namespace="ml", node="n2"))
    r = run(
        reflectors, kubeconfig, "pods", transform=lambda obj: obj["status"]["phase"], field_selector="spec.nodeName=n1"
    )
    assert r.wait_synced(5)
    assert r.items() == {"ml/vllm-0": "Running"}
    fake_api.apply(pod("vllm-0", 1, namespace="ml", node="n1", phase="Succeeded"))
    eventually(lambda: r.items() == {"ml/vllm-0": "Succeeded"})
    fake_api.apply(pod("vllm-2", 1, namespace="ml", node="n1"))
    fake_api.delete("pods", "ml", "vllm-0")
    eventually(lambda: r.items() == {"ml/vllm-2": "Running"})


def test_malformed_object_is_skipped_not_fatal(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    fake_api.apply(node("a", gpus=1))
    broken = node("b", gpus=1)
    broken["status"]["allocatable"]["nvidia.com/gpu"] = "lots"
    fake_api.apply(broken)
    r = run(reflectors, kubeconfig)
    assert r.wait_synced(5)
    assert r.items() == {"a": 1} and r.stats().errors == 1


def test_stop_returns_promptly_from_a_quiet_watch(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    r = run(reflectors, kubeconfig, watch_timeout_seconds=60.0)
    assert r.wait_synced(5)
    eventually(lambda: any("watch=true" in p for p in fake_api.requests))
    started = time.monotonic()
    r.stop()
    assert time.monotonic() - started < 2.0


def test_connect_without_any_configuration_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeConfigError, match="no Kubernetes configuration"):
        connect(None)
    with pytest.raises(KubeConfigError, match=r"missing\.yaml"):
        connect(str(tmp_path / "missing.yaml"))


def test_views_share_one_list_and_watch_and_hear_only_their_own_changes(
    fake_api: FakeKubeAPI, kubeconfig: str, reflectors: list[Reflector[Any]]
) -> None:
    """Two readers of one node watch (the cluster role's pods are read so by the cluster view and the engine
    pods): one list and one watch request, each view its own records, and a listener called only when its
    own records changed."""
    fake_api.apply(node("a", gpus=2))
    fake_api.apply(node("b", gpus=0))
    api = connect(kubeconfig)
    shared_one = shared(api, "nodes", **FAST)
    assert shared(connect(kubeconfig), "nodes", **FAST) is shared_one  # same server and identity
    gpus = shared_one.view(gpus_of)
    names = shared_one.view(lambda o: o["metadata"]["name"])
    heard: dict[str, int] = {"gpus": 0, "names": 0}
    gpus.listen(lambda: heard.__setitem__("gpus", heard["gpus"] + 1))
    names.listen(lambda: heard.__setitem__("names", heard["names"] + 1))
    reflectors.append(shared_one)
    gpus.start()
    names.start()
    assert gpus.wait_synced(5)
    assert gpus.items() == {"a": 2} and names.items() == {"a": "a", "b": "b"}
    assert heard == {"gpus": 1, "names": 1}  # the list
    with pytest.raises(RuntimeError):
        shared_one.view(gpus_of)  # too late: it would miss what was listed
    assert shared(api, "nodes", **FAST) is not shared_one  # a started watch is not joined
    fake_api.apply(node("b", gpus=0))  # nothing either view keeps changed
    fake_api.apply(node("c", gpus=4))
    eventually(lambda: gpus.items() == {"a": 2, "c": 4})
    eventually(lambda: names.values() == ["a", "b", "c"])
    assert heard == {"gpus": 2, "names": 2}
    assert sum("/api/v1/nodes" in p and "watch=true" not in p for p in fake_api.requests) == 1
    assert gpus.stats().objects == 2 and names.stats().objects == 3
    gpus.stop()
    assert shared_one.started and not shared_one._stop.is_set()  # the other view still reads it
    names.stop()
    assert shared_one._stop.is_set()


def test_the_cluster_roles_engine_pod_collectors_list_each_resource_once(
    fake_api: FakeKubeAPI, kubeconfig: str
) -> None:
    """Routes, replicas and audit all read Services, Ingresses, HTTPRoutes, Routes and HPAs (and the pods):
    views of one watch each, so every collection is listed once, however many collectors read it."""
    from exporter.config import Cluster, Replicas, Routes
    from tests.collectors import build_engine_pod_collectors

    config = Cluster(routes=Routes(enabled=True), replicas=Replicas(enabled=True))
    collectors = build_engine_pod_collectors(config, kubeconfig)
    assert sorted(c.name for c in collectors) == ["audit", "replicas", "routes"]
    for c in collectors:
        c.start()
    try:
        eventually(lambda: all(c.ready() for c in collectors))
    finally:
        for c in collectors:
            c.close()
    lists = [urlsplit(p).path for p in fake_api.requests if "watch=true" not in p]
    shared_ones = ("services", "ingresses", "httproutes", "routes", "horizontalpodautoscalers", "pods")
    assert {name: sum(p.endswith("/" + name) for p in lists) for name in shared_ones} == dict.fromkeys(shared_ones, 1)


def test_the_client_keeps_a_connection_for_every_watch_of_the_cluster_role(kubeconfig: str) -> None:
    """About twenty watches stream at once in the cluster role; a pool smaller than that (the client's default
    is 5 per CPU) discards connections at each release and reconnects, warning each time."""
    assert connect(kubeconfig).configuration.connection_pool_maxsize == CONNECTION_POOL_SIZE >= 20
