"""The cluster collector: reflectors for nodes, pods, ResourceSlices, ResourceClaims and DeviceClasses, and
the view.

The view is recomputed at a scrape only when a watch event changed something since the last one, and
the families are cached in between. The pods are a view of the cluster role's one pod watch
(`exporter.kube.pods`), which the engine-pod collectors read too. `ready()` turns true after the first
full list of every resource; until then `collect()` raises `CollectorUnavailable` (the API server may
be down at start), so
`llm_exporter_collector_success{collector="cluster"}` says so. `llm_kubernetes_last_sync_timestamp_seconds`
is the oldest confirmation among the watched resources: it stops advancing while the API server is away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from exporter.collect import Collector, CollectorUnavailable
from exporter.config import Cluster
from exporter.exposition import Family
from exporter.kube import render, transform
from exporter.kube.deviceclass import DeviceClassRecord, class_record, resource_of
from exporter.kube.placement import PodIndexCache
from exporter.kube.pods import UNFINISHED_PODS, pod_watch
from exporter.kube.records import PodRecord
from exporter.kube.view import compute
from exporter.sources.kube_connect import KubeConfigError, connect
from exporter.sources.kube_mirror import Mirror, Reflectors
from exporter.sources.kube_reflector import Reflector
from exporter.sources.kube_shared import shared
from exporter.watched import Recomputed, Watching

# finished pods hold nothing: let the API server filter them (a pod that finishes arrives as DELETED)
POD_FIELD_SELECTOR = UNFINISHED_PODS


class ClusterCollector(Watching):
    name = "cluster"

    def __init__(
        self,
        make_reflectors: Callable[[Callable[[], None]], Mapping[str, Mirror[Any]]],
        *,
        max_pending_pods: int,
    ) -> None:
        """`make_reflectors(on_event)`: nodes, pods and optionally resourceslices, resourceclaims."""
        self._max_pending = max_pending_pods
        self._index = PodIndexCache()  # the bound pods' index, moved along with the changes between views
        self._families = Recomputed(self._compute)
        self._reflectors = Reflectors(make_reflectors(self.mark_dirty))

    def mark_dirty(self) -> None:
        """The reflectors' on_event: called from their threads, so only a flag."""
        self._families.mark_dirty()

    def collect(self) -> Iterable[Family]:
        self.wait_for_first_lists()
        cached = self._families.get()  # concurrent scrapes: one recompute
        stats = {name: r.stats() for name, r in self._reflectors.items()}
        stamps = [r.last_sync_timestamp() for r in self._reflectors.values()]
        oldest = min((s for s in stamps if s is not None), default=None)
        return [*cached, *render.sync_families(stats, oldest)]

    def _compute(self) -> list[Family]:
        items = {name: r.items() for name, r in self._reflectors.items()}
        classes: dict[str, DeviceClassRecord] = items.get("deviceclasses") or {}

        def to_resource(device_class: str) -> str | None:
            return resource_of(device_class, classes)

        view = compute(
            items["nodes"],
            items["pods"],
            items.get("resourceslices"),
            items.get("resourceclaims"),
            to_resource,
            classes,
            self._index,
        )
        return render.view_families(view, self._max_pending) + render.class_families(classes)


class _Unconfigured:
    """No Kubernetes configuration at all: the cluster role has nothing to watch, and says why."""

    name = "cluster"

    def __init__(self, reason: str) -> None:
        self._reason = reason

    def ready(self) -> bool:
        return False

    def collect(self) -> Iterable[Family]:
        raise CollectorUnavailable(self._reason)


def _pod_record(obj: dict[str, Any]) -> PodRecord | None:
    return transform.pod_record(obj)


def reflectors(api: Any, config: Cluster, on_event: Callable[[], None], **options: Any) -> dict[str, Mirror[Any]]:
    """The cluster view's reflectors; nodes and pods are views of the role's one watch of each (`shared`)."""
    tuning: dict[str, Any] = {"page_size": config.page_size, "resync_seconds": config.resync_seconds, **options}
    common: dict[str, Any] = {"on_event": on_event, **tuning}
    pods = pod_watch(api, **tuning).view(_pod_record, on_event)
    return {
        # a view of the role's one node watch: the audit reads nodes too
        "nodes": shared(api, "nodes", **tuning).view(transform.node_record, on_event),
        "pods": pods,
        "resourceslices": Reflector(api, "resourceslices", transform=transform.slice_record, optional=True, **common),
        "resourceclaims": Reflector(api, "resourceclaims", transform=transform.claim_record, optional=True, **common),
        # a claim names a device class; the view counts the devices its selectors select (deviceclass.py)
        "deviceclasses": Reflector(api, "deviceclasses", transform=class_record, optional=True, **common),
    }


def build_cluster_collectors(config: Cluster, kubeconfig: str | None, **options: Any) -> list[Collector]:
    """The cluster role's collectors, not started; `options` tune the reflectors (tests: fast backoff)."""
    try:
        api = connect(kubeconfig)
    except KubeConfigError as exc:
        return [_Unconfigured(str(exc))]
    return [
        ClusterCollector(
            lambda on_event: reflectors(api, config, on_event, **options), max_pending_pods=config.max_pending_pods
        )
    ]
