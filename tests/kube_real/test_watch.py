"""The reflector (exporter/sources/kube_reflector.py) against the real API server: an API server restart over a
compacted etcd answers the resumed watch with 410 Gone and the reflector relists; changes made after the
restart arrive; `last_sync_timestamp` stands still while the API server is away; bookmarks move the
resourceVersion of a quiet watch on without a relist.

Faults the real server does not produce on demand (a 410 on a continue token mid-list, malformed objects,
a stalled stream) stay with the loopback API server in tests/kube/test_reflector.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from exporter.kube.records import NodeRecord, PodRecord
from exporter.kube.transform import node_record, pod_record
from exporter.sources.kube_connect import connect
from exporter.sources.kube_reflector import Reflector
from tests.kubecluster import Cluster, wait_for

FAST: dict[str, Any] = {"backoff_initial_seconds": 0.2, "backoff_max_seconds": 1.0, "connect_timeout_seconds": 5.0}


@pytest.fixture
def api(kube_cluster: Cluster) -> Any:
    return connect(str(kube_cluster.admin_kubeconfig))


@pytest.fixture
def nodes(api: Any) -> Iterator[Reflector[NodeRecord]]:
    reflector: Reflector[NodeRecord] = Reflector(api, "nodes", transform=node_record, **FAST)
    reflector.start()
    wait_for(reflector.synced, 60, "nodes listed")
    yield reflector
    reflector.stop()


def test_compaction_and_restart_give_410_and_a_relist(kube_cluster: Cluster, nodes: Reflector[NodeRecord]) -> None:
    cluster = kube_cluster
    cluster.add_node("watch-before", ready=False)
    wait_for(lambda: "watch-before" in nodes.items(), 60, "node seen by the watch")
    before = nodes.stats()
    cluster.stop_apiserver()
    try:
        down_at = time.time()
        stamp = nodes.last_sync_timestamp()
        assert stamp is not None and stamp <= down_at
        # etcd moves on and forgets: the restarted API server's watch cache starts past our resourceVersion
        cluster.etcd_put("/unrelated/key", "moves the revision")
        cluster.compact_etcd()
        time.sleep(3)
        assert nodes.last_sync_timestamp() == stamp, "the view was not confirmed while the API server was down"
        assert "watch-before" in nodes.items(), "the stored view is kept meanwhile"
    finally:
        cluster.start_apiserver()
    up_at = time.time()
    cluster.add_node("watch-after", ready=False)
    cluster.delete_nodes(["watch-before"])
    wait_for(lambda: "watch-after" in nodes.items() and "watch-before" not in nodes.items(), 60, "changes after")
    after = nodes.stats()
    assert after.relists > before.relists, f"no relist after 410: {before} -> {after}"
    assert (nodes.last_sync_timestamp() or 0) >= up_at
    cluster.delete_nodes(["watch-after"])


def test_bookmarks_move_a_quiet_watch_on(kube_cluster: Cluster, api: Any) -> None:
    namespace = kube_cluster.namespace("quiet")
    changes: list[int] = []
    pods: Reflector[PodRecord] = Reflector(
        api,
        "pods",
        transform=pod_record,
        namespace=namespace,
        watch_timeout_seconds=4.0,  # the server sends a bookmark before it ends a watch
        on_event=lambda: changes.append(1),
        **FAST,
    )
    pods.start()
    try:
        wait_for(pods.synced, 60, "pods listed")
        listed, listed_at = int(pods._rv or 0), pods.last_sync_timestamp() or 0
        # elsewhere the cluster goes on (kwok renews leases, controllers write); nothing in this namespace
        kube_cluster.add_node("bookmark-elsewhere", ready=False)
        wait_for(lambda: int(pods._rv or 0) > listed, 60, "a bookmark advanced the resourceVersion")
        stats = pods.stats()
        assert stats.relists == 0 and stats.errors == 0, stats
        assert stats.objects == 0 and changes == [1]  # the list only: bookmarks are not changes
        assert (pods.last_sync_timestamp() or 0) > listed_at  # but they confirm the view is current
    finally:
        pods.stop()
        kube_cluster.delete_nodes(["bookmark-elsewhere"])
        kube_cluster.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(200, 202))
