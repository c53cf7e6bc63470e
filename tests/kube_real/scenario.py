"""One scenario of the scheduler-agreement tests in the shared control plane (`Run`), the exporter's pending
series, and the judge's reading of the scheduler's verdicts.

The judge: kube-scheduler says per node which filter refused a pod (its FailedScheduling event), and the
same pod without GPUs (`Run.what_else_blocks`) says what refuses it once GPUs are out of the question,
where the scheduler stopped at its first failing filter. Each eligible node then stands as refused
whatever GPU pods are moved (`other_resources` only where the pods *without* GPUs bound there leave too
little: the API's own arithmetic, `Run.room_without_gpu_pods`), or not; `expected_reason` reads DESIGN's
rule off those standings: would moving GPU pods, or freeing what non-GPU pods hold, let it run?
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from exporter.kube.collector import ClusterCollector
from tests.kube_real.gpu_cluster import (
    GPU,
    GPU_NODE_CAPACITY,
    RUN_LABEL,
    blocking_filters,
    exported_samples,
    failed_scheduling,
    quantity,
    requested,
    without_gpus,
)
from tests.kubecluster import Cluster, wait_for

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SETTLE = 120.0
SELECTOR_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
FILTERS = ("other_resources", "topology_spread", "pod_affinity")  # kube-scheduler's order of the plugins


@dataclass
class Run:
    """One scenario's nodes and namespace in the shared control plane, removed afterwards."""

    cluster: Cluster
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    nodes: list[str] = field(default_factory=list)
    slices: list[str] = field(default_factory=list)
    namespace: str = ""

    def node(self, suffix: str, gpus: int = 0, labels: dict[str, str] | None = None, dra: bool = False) -> str:
        """A node of the scenario; with GPUs (or `dra`: GPUs published in ResourceSlices) it also offers the
        marker the pod without GPUs asks for."""
        name = f"r-{self.run}-{suffix}"
        capacity = {GPU: str(gpus), **GPU_NODE_CAPACITY} if gpus else dict(GPU_NODE_CAPACITY) if dra else {}
        self.cluster.add_node(name, capacity=capacity, labels={RUN_LABEL: self.run, **(labels or {})})
        self.nodes.append(name)
        return name

    def ready(self) -> None:
        for name in self.nodes:
            wait_for(partial(self.cluster.node_ready, name), SETTLE, f"{name} Ready")
        self.namespace = self.namespace or self.cluster.namespace(f"r-{self.run}")

    def pod(self, name: str, gpus: int = 0, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
        limits = {GPU: str(gpus)} if gpus else {}
        body: Obj = {
            "containers": [{"name": "c", "image": "vllm", "resources": {"limits": limits}}],
            "nodeSelector": {RUN_LABEL: self.run, **spec.pop("nodeSelector", {})},  # this scenario's nodes only
            **spec,
        }
        meta = {"name": name, "namespace": self.namespace, "labels": labels or {}}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}

    def create(self, pod: Obj) -> None:
        self.cluster.must("POST", f"/api/v1/namespaces/{self.namespace}/pods", pod)

    def bound(self, name: str) -> str | None:
        return self.get(name)["spec"].get("nodeName")  # type: ignore[no-any-return]

    def get(self, name: str) -> Obj:
        return self.cluster.must("GET", f"/api/v1/namespaces/{self.namespace}/pods/{name}")  # type: ignore[no-any-return]

    def wait_bound(self, name: str) -> str:
        return wait_for(lambda: self.bound(name), SETTLE, f"{name} bound")  # type: ignore[no-any-return]

    def verdict(self, name: str) -> dict[str, int]:
        """The scheduler's FailedScheduling verdict for `name`, once it has one, on this scenario's nodes: the
        nodes other tests of the shared control plane left are refused by the pod's selector on the run
        label, and their count is taken off that entry."""
        counts: dict[str, int] = wait_for(
            lambda: failed_scheduling(self.cluster, self.namespace, name), SETTLE, f"{name} FailedScheduling"
        )
        nodes = self.cluster.must("GET", "/api/v1/nodes")["items"]
        foreign = sum((n["metadata"].get("labels") or {}).get(RUN_LABEL) != self.run for n in nodes)
        if foreign:
            left = counts.get(SELECTOR_MISMATCH, 0) - foreign
            assert left >= 0, (counts, foreign)  # every foreign node must be refused by the selector
            counts = {k: v for k, v in counts.items() if k != SELECTOR_MISMATCH}
            if left:
                counts[SELECTOR_MISMATCH] = left
        return counts

    def what_else_blocks(self, pod: Obj) -> dict[str, int]:
        """Create `pod` without GPUs (on the GPU nodes only, see `without_gpus`): {} when it schedules, else
        the filters that refuse it there, with their node counts."""
        probe = without_gpus(pod, pod["metadata"]["name"] + "-nogpu")
        name = probe["metadata"]["name"]
        self.create(probe)

        def decided() -> tuple[str, dict[str, int]] | None:
            if self.bound(name):
                return ("bound", {})
            counts = failed_scheduling(self.cluster, self.namespace, name)
            return None if counts is None else ("refused", blocking_filters(counts))

        try:
            _, filters = wait_for(decided, SETTLE, f"{name} bound or FailedScheduling")
            return filters  # type: ignore[no-any-return]
        finally:  # it must not hold cpu or count for spread while the exporter is read
            self.cluster.must("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{name}", {"gracePeriodSeconds": 0})
            wait_for(partial(self._gone, name), SETTLE, f"{name} deleted")

    def bound_pods(self, node: str) -> list[Obj]:
        """The pods of this scenario bound to `node`."""
        items = self.cluster.must("GET", f"/api/v1/namespaces/{self.namespace}/pods")["items"]
        return [p for p in items if p["spec"].get("nodeName") == node]

    def free_gpus(self, node: str) -> int:
        """The node's allocatable GPUs less the GPUs its pods are bound with, from the API."""
        allocatable = int(self.cluster.must("GET", f"/api/v1/nodes/{node}")["status"]["allocatable"].get(GPU, 0))
        return allocatable - int(sum(requested(p, GPU) for p in self.bound_pods(node)))

    def room_without_gpu_pods(self, node: str, pod: Obj) -> bool:
        """Whether `pod`'s cpu and memory fit on `node` beside the pods there that hold no GPUs (the GPU pods
        moved, with what they hold)."""
        allocatable = self.cluster.must("GET", f"/api/v1/nodes/{node}")["status"]["allocatable"]
        staying = [p for p in self.bound_pods(node) if not requested(p, GPU)]
        return all(
            requested(pod, r) <= quantity(allocatable[r]) - sum(requested(p, r) for p in staying)
            for r in ("cpu", "memory")
        )

    def standings(self, pod: Obj, refused: Mapping[str, str | None]) -> list[tuple[int, str | None]]:
        """(free GPUs, the filter refusing it whatever GPU pods are moved) per eligible node, from `refused`:
        the filter the scheduler refused `pod` with there, GPUs aside (None: none)."""
        out = []
        for node, by in refused.items():
            moves = by == "other_resources" and self.room_without_gpu_pods(node, pod)  # GPU pods hold what it lacks
            out.append((self.free_gpus(node), None if moves else by))
        return out

    def _gone(self, name: str) -> bool:
        status, _ = self.cluster.request("GET", f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        return status == 404

    def close(self) -> None:
        if self.namespace:
            self.cluster.must(
                "DELETE", f"/api/v1/namespaces/{self.namespace}/pods", {"gracePeriodSeconds": 0}, ok=(200,)
            )
            self.cluster.must("DELETE", f"/api/v1/namespaces/{self.namespace}", ok=(200, 202))
        for name in self.slices:
            self.cluster.must("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{name}", ok=(200, 404))
        self.cluster.delete_nodes(self.nodes)


def pending(collector: ClusterCollector, namespace: str) -> dict[str, tuple[str, str]]:
    """pod → (resource, reason) of the exporter's pending series in `namespace`."""
    return {
        labels["pod"]: (labels["resource"], labels["reason"])
        for labels, _ in exported_samples(collector).get("llm_pending_pod_gpus_requested", [])
        if labels["namespace"] == namespace
    }


def expected_reason(requested_gpus: int, standings: Sequence[tuple[int, str | None]]) -> str:
    """DESIGN's rule on the standings of a pod the scheduler refused: `fragmented` when the free GPUs of the
    nodes no filter refuses suffice (moving GPU pods makes room); else the filter holding back the most free
    GPUs when every eligible node's would suffice; else `insufficient`."""
    if not standings:
        return "constrained"
    if sum(free for free, by in standings if by is None) >= requested_gpus:
        return "fragmented"
    held = {f: sum(free for free, by in standings if by == f) for f in FILTERS}
    if sum(free for free, _ in standings) >= requested_gpus:
        return max(FILTERS, key=lambda f: (held[f], -FILTERS.index(f)))
    return "insufficient"


def uniformly(what_else: dict[str, int], nodes: Sequence[str]) -> dict[str, str | None]:
    """Every node refused by the one filter of `what_else` (its count must be the nodes'), or none ({})."""
    if not what_else:
        return dict.fromkeys(nodes)
    (only,) = what_else  # each scenario has one blocker
    assert what_else[only] == len(nodes), f"{only} refuses {what_else[only]} of {len(nodes)} nodes"
    return dict.fromkeys(nodes, only)


def exporter_says(collector: ClusterCollector, run: Run, pod: str, expected: tuple[str, str]) -> None:
    try:
        wait_for(lambda: pending(collector, run.namespace).get(pod) == expected, 30, f"exporter: {pod} {expected}")
    except AssertionError as err:
        raise AssertionError(f"{err}; the exporter says {pending(collector, run.namespace)}") from None


def anti_affinity(app: str, key: str = HOST) -> Obj:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
