"""The cluster role's collector on the session's control plane, shared by the scheduler-agreement tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from exporter.config import Cluster as ClusterConfig
from exporter.kube.collector import ClusterCollector, build_cluster_collectors
from tests.kube_real.scenario import Run
from tests.kubecluster import Cluster, wait_for


@pytest.fixture(scope="module")
def collector(kube_cluster: Cluster) -> Iterator[ClusterCollector]:
    """The cluster role's collector as `serve --role cluster` builds it, on the admin kubeconfig."""
    (built,) = build_cluster_collectors(ClusterConfig(), str(kube_cluster.admin_kubeconfig))
    assert isinstance(built, ClusterCollector), built
    built.start()
    wait_for(built.ready, 60, "cluster collector synced")
    yield built
    built.close()


@pytest.fixture
def scenario(kube_cluster: Cluster) -> Iterator[Run]:
    """One scenario's nodes and namespace in the shared control plane, removed afterwards."""
    run = Run(kube_cluster)
    try:
        yield run
    finally:
        run.close()
