"""The cluster view as metric families."""

from __future__ import annotations

from collections.abc import Mapping

from exporter.catalogue import cluster as m
from exporter.exposition import Family
from exporter.kube.deviceclass import DeviceClassRecord
from exporter.kube.pending import REASONS
from exporter.kube.view import ClusterView
from exporter.sources.kube_mirror import ReflectorStats


def view_families(view: ClusterView, max_pending_pods: int) -> list[Family]:
    allocatable, allocated, free = Family(m.NODE_ALLOCATABLE), Family(m.NODE_ALLOCATED), Family(m.NODE_FREE)
    for u in view.usage:
        labels = (u.node, u.resource)
        allocatable.add(labels, u.allocatable)
        allocated.add(labels, u.allocated)
        free.add(labels, u.free)
    schedulable = Family(m.NODE_SCHEDULABLE)
    for node, ok in sorted(view.schedulable.items()):
        schedulable.add((node,), 1.0 if ok else 0.0)
    cluster_free, largest = Family(m.CLUSTER_FREE), Family(m.CLUSTER_LARGEST_FREE_BLOCK)
    for resource, (total, block) in sorted(view.free.items()):
        cluster_free.add((resource,), total)
        largest.add((resource,), block)
    # one series per unschedulable GPU pod, bounded; the most actionable reasons are kept first
    requested = Family(m.PENDING_POD_GPUS_REQUESTED)
    for p in view.pending[:max_pending_pods]:
        requested.add((p.namespace, p.pod, p.resource, p.reason), p.requested)
    counts: dict[tuple[str, str], int] = {(r, reason): 0 for r in view.free for reason in REASONS}
    for p in view.pending:
        counts[(p.resource, p.reason)] = counts.get((p.resource, p.reason), 0) + 1
    pending = Family(m.CLUSTER_PENDING_PODS)
    for (resource, reason), count in sorted(counts.items()):
        pending.add((resource, reason), count)
    truncated = Family(m.PENDING_TRUNCATED)
    truncated.add((), max(0, len(view.pending) - max_pending_pods))
    unhealthy = Family(m.NODE_UNHEALTHY)
    for h in view.unhealthy:
        unhealthy.add((h.node, h.resource), h.count)
    return [allocatable, allocated, free, schedulable, cluster_free, largest, requested, pending, truncated, unhealthy]


def class_families(classes: Mapping[str, DeviceClassRecord]) -> list[Family]:
    """Whether each DeviceClass's selectors are understood; nothing on clusters without DeviceClasses."""
    if not classes:
        return []
    understood = Family(m.DEVICE_CLASS_UNDERSTOOD)
    for name, record in sorted(classes.items()):
        understood.add((name,), 1.0 if record.understood else 0.0)
    return [understood]


def sync_families(stats: Mapping[str, ReflectorStats], last_sync: float | None) -> list[Family]:
    objects, relists = Family(m.KUBE_OBJECTS), Family(m.KUBE_RELISTS)
    restarts, errors = Family(m.KUBE_WATCH_RESTARTS), Family(m.KUBE_REQUEST_ERRORS)
    for resource, s in sorted(stats.items()):
        objects.add((resource,), s.objects)
        relists.add((resource,), s.relists)
        restarts.add((resource,), s.watch_restarts)
        errors.add((resource,), s.errors)
    families = [objects, relists, restarts, errors]
    if last_sync is not None:
        sync = Family(m.LAST_SYNC)
        sync.add((), last_sync)
        families.append(sync)
    return families
