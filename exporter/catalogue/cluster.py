"""Cluster metrics (cluster role): GPU capacity per node and resource, and why GPU pods are Pending."""

from __future__ import annotations

from functools import partial

from exporter.catalogue.spec import MetricSpec, counter, gauge

NODE_RESOURCE = ("node", "resource")

_g = partial(gauge, subsystem="cluster", role="cluster")
_c = partial(counter, subsystem="cluster", role="cluster")

NODE_ALLOCATABLE = _g(
    "llm_node_gpus_allocatable",
    "GPUs (or slices, shares, devices) the node offers; DRA devices per DeviceClass that selects them.",
    NODE_RESOURCE,
)
NODE_ALLOCATED = _g(
    "llm_node_gpus_allocated", "GPUs requested by the pods bound to the node that have not finished.", NODE_RESOURCE
)
NODE_FREE = _g("llm_node_gpus_free", "Allocatable minus allocated.", NODE_RESOURCE)
NODE_UNHEALTHY = _g(
    "llm_node_gpus_unhealthy",
    "GPUs the node has but does not offer: capacity minus allocatable (the device plugin withdraws a GPU it "
    "finds unhealthy; a device plugin that stopped reports capacity and allocatable 0).",
    NODE_RESOURCE,
)
NODE_SCHEDULABLE = _g(
    "llm_node_schedulable",
    "1 when the node is Ready and not cordoned (nodes that offer or hold a GPU resource).",
    ("node",),
)
CLUSTER_FREE = _g("llm_cluster_gpus_free", "Free GPUs summed over schedulable nodes.", ("resource",))
CLUSTER_LARGEST_FREE_BLOCK = _g(
    "llm_cluster_gpus_largest_free_block",
    "The largest free count on one schedulable node: the biggest request that can be placed now.",
    ("resource",),
)
PENDING_POD_GPUS_REQUESTED = _g(
    "llm_pending_pod_gpus_requested",
    "GPUs requested by an unschedulable or gated pod, with the reason it cannot be placed: fragmented, "
    "insufficient, constrained, other_resources, pod_affinity, topology_spread, fits, quota, gated or backoff.",
    ("namespace", "pod", "resource", "reason"),
)
LAST_SYNC = _g(
    "llm_kubernetes_last_sync_timestamp_seconds",
    "Unix time at which the cluster view was last known to be in sync with the API server.",
    (),
    unit="seconds",
)
CLUSTER_PENDING_PODS = _g(
    "llm_cluster_pending_pods",
    "Unschedulable or gated GPU pods by resource and reason, all of them (llm_pending_pod_gpus_requested is bounded).",
    ("resource", "reason"),
)
PENDING_TRUNCATED = _g(
    "llm_pending_pods_truncated",
    "Unschedulable GPU pod series left out of llm_pending_pod_gpus_requested by cluster.max_pending_pods.",
    (),
)
KUBE_OBJECTS = _g(
    "llm_kubernetes_objects", "Objects of the resource kept in the cluster view (after filtering).", ("resource",)
)
KUBE_RELISTS = _c(
    "llm_kubernetes_relists_total",
    "Full lists after the first one: the watch history was compacted (410 Gone) or a resync was due.",
    ("resource",),
)
KUBE_WATCH_RESTARTS = _c(
    "llm_kubernetes_watch_restarts_total",
    "Watch streams that ended abnormally (dropped connection, error, 410 Gone) and were re-established.",
    ("resource",),
)
KUBE_REQUEST_ERRORS = _c(
    "llm_kubernetes_request_errors_total",
    "Failed list or watch requests (connection refused, timeouts, error statuses) and unreadable objects.",
    ("resource",),
)
DEVICE_CLASS_UNDERSTOOD = _g(
    "llm_dra_device_class_understood",
    "1 when every CEL selector of the DRA DeviceClass is in the subset the cluster view evaluates; 0 when not: "
    "no device is counted under it and pods whose claims ask for it are not classified.",
    ("device_class",),
)

GPU_PRICE = _g(
    "llm_gpu_price_per_second",
    "The configured price of one GPU of this model (the name NVML reports, as llm_gpu_info's name) per "
    "second held, in the configured currency: cost.gpu_hour_prices over 3600. Absent for a model without a "
    "configured price; no price is shipped.",
    ("name", "currency"),
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
    CLUSTER_PENDING_PODS,
    PENDING_TRUNCATED,
    KUBE_OBJECTS,
    KUBE_RELISTS,
    KUBE_WATCH_RESTARTS,
    KUBE_REQUEST_ERRORS,
    NODE_UNHEALTHY,
    DEVICE_CLASS_UNDERSTOOD,
    GPU_PRICE,
)
