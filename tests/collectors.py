"""Rows of the table of collectors (`exporter.roles`) built alone, as `serve` builds them for a role.

The engine collector with its discovery, and the engine-pod collectors sharing one watch, are what most real
Kubernetes tests exercise; building them through the table keeps the tests on the wiring production uses.
"""

from __future__ import annotations

from exporter.audit.collector import AuditCollector
from exporter.collect import Collector
from exporter.config import Cluster, Config, Engines
from exporter.replicas.collector import ReplicasCollector
from exporter.roles import build_collectors
from exporter.routes.collector import RoutesCollector


def build_engine_collectors(config: Engines, kubeconfig: str | None) -> list[Collector]:
    """The node role's engine collector, with Kubernetes discovery when enabled (and then the replicas'
    ready -> first token, which needs the discovered pods' Ready times)."""
    rows = frozenset({"engine_discovery", "engines", "replica_first_token"})
    return build_collectors("node", Config(engines=config), kubeconfig, only=rows)


def build_engine_pod_collectors(
    config: Cluster, kubeconfig: str | None
) -> list[RoutesCollector | ReplicasCollector | AuditCollector]:
    """The routes, replicas and audit collectors (those enabled), sharing one engine-pod reflector; the audit
    reads its measured cold starts from the replicas collector's start-up histograms."""
    rows = frozenset({"routes", "replicas", "audit"})
    built = build_collectors("cluster", Config(cluster=config), kubeconfig, only=rows)
    return [c for c in built if isinstance(c, (RoutesCollector, ReplicasCollector, AuditCollector))]
