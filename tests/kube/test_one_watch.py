"""One list+watch per resource in each role, whatever number of collectors read it.

Each role is built from the table of collectors with every collector on, as `serve` builds it, against the
fake API server, and started; every collection the role reads must then be listed exactly once. Before, the
node role listed this node's pods twice (engine discovery and the GPU pod directory) and the cluster role
its nodes (cluster view and audit) and ScaledObjects (watchdog and audit) twice. A collection narrowed by a
selector is its own: the watchdog's dashboard ConfigMaps (by label) beside the audit's every ConfigMap.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import parse_qs, urlsplit

import pytest

from exporter.config import Cluster, Config, Engines, KubernetesDiscovery, Watchdog, WatchdogPrometheus
from exporter.roles import build
from tests.fakes.kube_api import FakeKubeAPI
from tests.kube.waiting import eventually


def lists(fake_api: FakeKubeAPI) -> Counter[str]:
    """The collections listed (not watched), by path and field or label selector."""
    counted: Counter[str] = Counter()
    for request in fake_api.requests:
        url = urlsplit(request)
        query = parse_qs(url.query)
        if query.get("watch") == ["true"]:
            continue
        selector = query.get("fieldSelector", query.get("labelSelector", [""]))[0]
        counted[url.path + (f"?{selector}" if selector else "")] += 1
    return counted


def run(role: str, config: Config, kubeconfig: str) -> None:
    """The role as `serve` runs it, until every collector is ready."""
    collectors = build(role, config, kubeconfig)
    collectors.start()
    try:
        eventually(collectors.ready, timeout=20)
    finally:
        collectors.close()


def test_the_node_role_lists_its_nodes_pods_once(
    fake_api: FakeKubeAPI, kubeconfig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Engine discovery and the GPU collector's pod directory (which names the pods of GPU processes) both
    read the pods of this node: one watch."""
    monkeypatch.setenv("NODE_NAME", "node-1")
    config = Config(engines=Engines(kubernetes_discovery=KubernetesDiscovery(enabled=True)))
    run("node", config, kubeconfig)
    assert lists(fake_api) == {"/api/v1/pods?spec.nodeName=node-1": 1}


def test_the_cluster_role_lists_each_resource_once(fake_api: FakeKubeAPI, kubeconfig: str) -> None:
    """The cluster view, routes, replicas, audit and watchdog: nodes (cluster view, audit), ScaledObjects
    (watchdog, audit), Services, HPAs and the pods each read by several, listed once each."""
    watchdog = Watchdog(enabled=True, interval_seconds=3600, prometheus=WatchdogPrometheus(url="http://127.0.0.1:9"))
    run("cluster", Config(cluster=Cluster(watchdog=watchdog)), kubeconfig)
    counted = lists(fake_api)
    assert counted["/api/v1/nodes"] == 1
    assert counted["/apis/keda.sh/v1alpha1/scaledobjects"] == 1
    assert counted["/api/v1/configmaps"] == counted["/api/v1/configmaps?grafana_dashboard"] == 1
    assert {path: n for path, n in counted.items() if n > 1} == {}
