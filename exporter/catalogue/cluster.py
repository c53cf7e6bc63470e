"""Cluster metrics (cluster role): GPU capacity per node and resource, and why GPU pods are Pending."""

from __future__ import annotations

from functools import partial

from exporter.catalogue.spec import MetricSpec, gauge

NODE_RESOURCE = ("node", "resource")

_g = partial(gauge, subsystem="cluster", role="cluster")

NODE_ALLOCATABLE = _g("llm_node_gpus_allocatable", "GPUs (or slices, shares, devices) the node offers.", NODE_RESOURCE)
NODE_ALLOCATED = _g(
    "llm_node_gpus_allocated", "GPUs requested by the pods bound to the node that have not finished.", NODE_RESOURCE
)
NODE_FREE = _g("llm_node_gpus_free", "Allocatable minus allocated.", NODE_RESOURCE)
NODE_SCHEDULABLE = _g("llm_node_schedulable", "1 when the node is Ready and not cordoned.", ("node",))
CLUSTER_FREE = _g("llm_cluster_gpus_free", "Free GPUs summed over schedulable nodes.", ("resource",))
CLUSTER_LARGEST_FREE_BLOCK = _g(
    "llm_cluster_gpus_largest_free_block",
    "The largest free count on one schedulable node: the biggest request that can be placed now.",
    ("resource",),
)
PENDING_POD_GPUS_REQUESTED = _g(
    "llm_pending_pod_gpus_requested",
    "GPUs requested by an unschedulable pod, with the reason it cannot be placed: fragmented, insufficient, "
    "constrained or fits.",
    ("namespace", "pod", "resource", "reason"),
)
LAST_SYNC = _g(
    "llm_kubernetes_last_sync_timestamp_seconds",
    "Unix time at which the cluster view was last known to be in sync with the API server.",
    (),
    unit="seconds",
)

METRICS: tuple[MetricSpec, ...] = (
    NODE_ALLOCATABLE,
    NODE_ALLOCATED,
    NODE_FREE,
    NODE_SCHEDULABLE,
    CLUSTER_FREE,
    CLUSTER_LARGEST_FREE_BLOCK,
    PENDING_POD_GPUS_REQUESTED,
    LAST_SYNC,
)
