"""The replicas collector on the real control plane, as the `*_real` tests of start-up, model info and owners
use it: built through the table of collectors (routes and audit off), its first list done and the test's kwok
node Ready before the test applies anything; afterwards closed, with the test's namespace and node gone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from exporter.audit.collector import AuditCollector
from exporter.config import Audit, Cluster, Routes
from exporter.exposition import render
from exporter.replicas.collector import ReplicasCollector
from exporter.routes.collector import RoutesCollector
from tests.collectors import build_engine_pod_collectors
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for


@contextmanager
def replicas_collector(
    cluster: ControlPlane, ns: str, node: str
) -> Iterator[RoutesCollector | ReplicasCollector | AuditCollector]:
    (collector,) = build_engine_pod_collectors(
        Cluster(routes=Routes(enabled=False), audit=Audit(enabled=False)), str(cluster.admin_kubeconfig)
    )
    collector.start()
    try:
        wait_for(collector.ready, 60, "the first list of pods")
        wait_for(lambda: cluster.node_ready(node), 120, "the kwok node Ready")
        yield collector
    finally:
        collector.close()
        cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))
        cluster.delete_nodes([node])


def rendered_when(collector: RoutesCollector | ReplicasCollector | AuditCollector, ns: str,
                  holds: Callable[[str], bool], what: str) -> str:  # fmt: skip
    """The collector's exposition once `holds` is true of it (within 120 s); on a timeout, the lines of the
    test's namespace are printed before the failure."""
    last = [""]

    def counted() -> bool:
        last[0] = render(collector.collect())
        return holds(last[0])

    try:
        wait_for(counted, 120, what)
    except AssertionError:
        print("\n".join(line for line in last[0].splitlines() if ns in line))
        raise
    return last[0]
