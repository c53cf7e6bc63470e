"""One cluster of a store that holds many (Thanos Query): queries run as that cluster's own Prometheus runs them.

A query written for one cluster (a KEDA trigger against its cluster's Prometheus) would, on the store of all,
read every cluster's series: empty in cluster b, it returns cluster a's data and looks fine. `ClusterScoped`
wraps a `Prometheus` so that every query, the checked one and every query of its diagnosis (is the name
present, when was it last seen, which release runs), gets `label="value"` on each selector
(`exporter.promql.cluster.only`). Label values (names for the similar-name hint) are those of the whole store.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from exporter.promql.cluster import ClusterLabelError, label_name, only
from exporter.sources.prometheus import Prometheus, PrometheusError


@dataclass(frozen=True)
class Cluster:
    label: str  # the label that names clusters (render --cluster-label)
    value: str  # this cluster's value of it

    def scoped(self, expr: str) -> str:
        """`expr` as the cluster sees it; an expression that drops the label (`without (cluster)`) is an error."""
        try:
            return only(expr, self.label, self.value)
        except ClusterLabelError as exc:
            raise PrometheusError(f"cannot scope to {self.label}={self.value!r}: {exc}", 400) from exc

    def __str__(self) -> str:
        return f'{self.label}="{self.value}"'


class ClusterScoped:
    """A `Prometheus` that answers as one cluster's own Prometheus would."""

    def __init__(self, inner: Prometheus, cluster: Cluster) -> None:
        self.inner = inner
        self.cluster = cluster

    def query(self, expr: str) -> list[dict[str, Any]]:
        return self.inner.query(self.cluster.scoped(expr))

    def label_values(self, label: str) -> list[str]:
        return self.inner.label_values(label)


def add_replica_label(parser: argparse.ArgumentParser) -> None:
    """`--replica-label`, as `check` and `diagnose` both take it."""
    parser.add_argument(
        "--replica-label",
        action="append",
        default=[],
        type=label_name,
        metavar="NAME",
        help="a label that tells Prometheus replicas apart behind Thanos Query, deduplicated on and ignored "
        "(repeatable; default: what Thanos Query runs with, --query.replica-label)",
    )
