"""The reasons beyond the GPUs against the real kube-scheduler: pod anti-affinity, topology spread, cpu taken
on the GPU nodes, a DRA class that selects one GPU model, Kueue's gate, and a healthy pod.

The judge is the scheduler itself. Its FailedScheduling event names, per node, the first filter that
failed; NodeResourcesFit runs before topology spread and pod affinity, so a pod short of GPUs is reported
"Insufficient nvidia.com/gpu" even where anti-affinity would refuse it too. Each scenario therefore also
creates the same pod without its GPUs: what the scheduler says of that one is what blocks once GPUs were
free (the exporter's `other_resources`, `topology_spread`, `pod_affinity`); if it schedules, the GPUs
are the blocker and the free counts decide (`fragmented`, `insufficient`). A pod that schedules has no
pending series.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest

from exporter.kube.collector import ClusterCollector
from tests.kube_real.gpu_cluster import (
    GPU,
    GPU_NODE_CAPACITY,
    RUN_LABEL,
    blocking_filters,
    classify,
    exported_samples,
    failed_scheduling,
    without_gpus,
)
from tests.kubecluster import Cluster, wait_for

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SETTLE = 120.0
SELECTOR_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
DRA_DRIVER = "gpu.example.com"
H100_CLASS = "example-h100"
H100_SELECTOR = f'device.driver == "{DRA_DRIVER}" && device.attributes["{DRA_DRIVER}"].model == "h100"'


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


@pytest.fixture
def scenario(kube_cluster: Cluster) -> Iterator[Run]:
    run = Run(kube_cluster)
    try:
        yield run
    finally:
        run.close()


def pending(collector: ClusterCollector, namespace: str) -> dict[str, tuple[str, str]]:
    """pod → (resource, reason) of the exporter's pending series in `namespace`."""
    return {
        labels["pod"]: (labels["resource"], labels["reason"])
        for labels, _ in exported_samples(collector).get("llm_pending_pod_gpus_requested", [])
        if labels["namespace"] == namespace
    }


def expected_reason(what_else: dict[str, int], eligible: int, requested: int, free: list[int]) -> str:
    """The judge's reading: a filter that refuses the GPU-less pod on every eligible node is the reason;
    otherwise the GPUs are, and the free counts on the nodes decide."""
    if what_else:
        (only,) = what_else  # each scenario has one blocker
        assert what_else[only] >= eligible, f"{only} refuses {what_else[only]} of {eligible} nodes"
        return only
    return classify(requested, free)


def exporter_says(collector: ClusterCollector, run: Run, pod: str, expected: tuple[str, str]) -> None:
    wait_for(lambda: pending(collector, run.namespace).get(pod) == expected, 30, f"exporter: {pod} {expected}")


def anti_affinity(app: str, key: str = HOST) -> Obj:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_anti_affinity_with_one_free_gpu_per_node_is_not_fragmentation(
    scenario: Run, collector: ClusterCollector
) -> None:
    """The false page: replicas of 2 GPUs, one per node (anti-affinity); 1 + 1 free GPUs, the third waits."""
    nodes = [scenario.node(str(i), gpus=3) for i in range(2)]
    scenario.ready()
    replicas = [scenario.pod(f"vllm-{i}", 2, labels={"app": "vllm"}, affinity=anti_affinity("vllm")) for i in range(3)]
    for replica in replicas[:2]:
        scenario.create(replica)
    assert sorted(scenario.wait_bound(f"vllm-{i}") for i in range(2)) == sorted(nodes)
    scenario.create(replicas[2])
    verdict = scenario.verdict("vllm-2")
    assert verdict == {f"Insufficient {GPU}": 2}  # the scheduler stops at its first failing filter
    what_else = scenario.what_else_blocks(replicas[2])
    reason = expected_reason(what_else, eligible=2, requested=2, free=[1, 1])
    assert reason == "pod_affinity"  # not `fragmented`: bin-packing cannot help, LLMPodPendingWithFreeGPUs stays quiet
    exporter_says(collector, scenario, "vllm-2", (GPU, reason))


def test_cpu_taken_on_the_gpu_nodes(scenario: Run, collector: ClusterCollector) -> None:
    """Four GPUs free on each of two nodes, but other pods hold almost all their cpu."""
    nodes = [scenario.node(str(i), gpus=4) for i in range(2)]
    scenario.ready()
    for i, name in enumerate(nodes):
        hog = scenario.pod(f"etl-{i}", nodeSelector={HOST: name})
        hog["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "63", "memory": "1Gi"}
        scenario.create(hog)
        scenario.wait_bound(f"etl-{i}")
    vllm = scenario.pod("vllm-0", 2, labels={"app": "vllm"})
    vllm["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "4", "memory": "16Gi"}
    scenario.create(vllm)
    assert scenario.verdict("vllm-0") == {"Insufficient cpu": 2}
    reason = expected_reason(scenario.what_else_blocks(vllm), eligible=2, requested=2, free=[4, 4])
    assert reason == "other_resources"
    exporter_says(collector, scenario, "vllm-0", (GPU, reason))


def test_topology_spread_over_a_zone_without_gpus(scenario: Run, collector: ClusterCollector) -> None:
    """Zone a has the GPUs, zone b only a cpu node: with maxSkew 1 the second replica may not go to a."""
    scenario.node("a", gpus=4, labels={ZONE: "a"})
    scenario.node("b", labels={ZONE: "b"})
    scenario.ready()
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
    }
    replicas = [
        scenario.pod(f"spread-{i}", 1, labels={"app": "spread"}, topologySpreadConstraints=[constraint])
        for i in range(2)
    ]
    scenario.create(replicas[0])
    scenario.wait_bound("spread-0")
    scenario.create(replicas[1])
    verdict = scenario.verdict("spread-1")
    assert verdict == {"node(s) didn't match pod topology spread constraints": 1, f"Insufficient {GPU}": 1}
    reason = expected_reason(scenario.what_else_blocks(replicas[1]), eligible=1, requested=1, free=[3])
    assert reason == "topology_spread"
    exporter_says(collector, scenario, "spread-1", (GPU, reason))


def test_a_free_node_schedules_and_nothing_is_pending(scenario: Run, collector: ClusterCollector) -> None:
    """The healthy case: anti-affinity, spread and cpu all allow a node with free GPUs; no verdict at all."""
    scenario.node("0", gpus=2, labels={ZONE: "a"})
    scenario.node("1", gpus=2, labels={ZONE: "b"})
    scenario.ready()
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "ok"}},
    }
    for i in range(2):
        replica = scenario.pod(
            f"ok-{i}", 2, labels={"app": "ok"}, affinity=anti_affinity("ok"), topologySpreadConstraints=[constraint]
        )
        replica["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "8", "memory": "64Gi"}
        scenario.create(replica)
    assert len({scenario.wait_bound(f"ok-{i}") for i in range(2)}) == 2
    wait_for(lambda: exported_samples(collector).get("llm_node_gpus_allocated"), 30, "exporter view")
    wait_for(
        lambda: (
            {
                labels["node"]: v
                for labels, v in exported_samples(collector)["llm_node_gpus_allocated"]
                if labels["node"] in scenario.nodes
            }
            == dict.fromkeys(scenario.nodes, 2.0)
        ),
        30,
        "both nodes' GPUs allocated in the exporter",
    )
    assert pending(collector, scenario.namespace) == {}


def test_kueue_gated_pod_waits_for_quota(scenario: Run, collector: ClusterCollector) -> None:
    """A pod Kueue holds with its admission gate: the scheduler says SchedulingGated, the exporter `quota`."""
    scenario.node("0", gpus=4)
    scenario.ready()
    gated = scenario.pod("job-0", 1, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
    scenario.create(gated)

    def scheduling_gated() -> bool:
        conditions = scenario.get("job-0")["status"].get("conditions") or []
        return any(c["type"] == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions)

    wait_for(scheduling_gated, SETTLE, "job-0 SchedulingGated")
    exporter_says(collector, scenario, "job-0", (GPU, "quota"))


def _slice(node: str, models: list[str]) -> Obj:
    devices = [
        {"name": f"gpu-{i}", "attributes": {"model": {"string": m}, "type": {"string": "gpu"}}}
        for i, m in enumerate(models)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRA_DRIVER}"},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _claim_pod(run: Run, name: str, template: str, node: str | None = None) -> Obj:
    pod = run.pod(name, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": template}])
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    if node:
        pod["spec"]["nodeSelector"][HOST] = node
    return pod


def test_a_device_class_for_one_gpu_model(scenario: Run, collector: ClusterCollector) -> None:
    """H100s free 2/2/0 on three nodes, four A100s free on a fourth, a claim for 3 H100s: fragmented."""
    cluster = scenario.cluster
    cluster.apply(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": H100_CLASS},
            "spec": {"selectors": [{"cel": {"expression": H100_SELECTOR}}]},
        }
    )
    h100 = [scenario.node(f"h{i}", dra=True) for i in range(3)]
    a100 = scenario.node("a0", dra=True)
    scenario.ready()
    for name, models in [*((n, ["h100"] * 2) for n in h100), (a100, ["a100"] * 4)]:
        cluster.must("POST", "/apis/resource.k8s.io/v1/resourceslices", _slice(name, models))
        scenario.slices.append(f"{name}-{DRA_DRIVER}")
    for template, count in (("two-h100", 2), ("three-h100", 3)):
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": template, "namespace": scenario.namespace},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": H100_CLASS, "count": count}}]
                    }
                }
            },
        }
        cluster.must("POST", f"/apis/resource.k8s.io/v1/namespaces/{scenario.namespace}/resourceclaimtemplates", body)
    scenario.create(_claim_pod(scenario, "busy", "two-h100", node=h100[2]))
    assert scenario.wait_bound("busy") == h100[2]
    big = _claim_pod(scenario, "big", "three-h100")
    scenario.create(big)
    verdict = scenario.verdict("big")
    assert verdict == {"cannot allocate all claims": 4}, verdict  # every node: the A100s do not count
    reason = expected_reason(scenario.what_else_blocks(big), eligible=3, requested=3, free=[2, 2, 0])
    assert reason == "fragmented"
    exporter_says(collector, scenario, "big", (H100_CLASS, reason))

    def free() -> dict[tuple[str, str], float]:
        samples = exported_samples(collector).get("llm_node_gpus_free", [])
        return {(s["node"], s["resource"]): v for s, v in samples if s["node"] in scenario.nodes}

    expected = {
        (h100[0], H100_CLASS): 2.0,
        (h100[1], H100_CLASS): 2.0,
        (h100[2], H100_CLASS): 0.0,
        (a100, DRA_DRIVER): 4.0,
    }
    wait_for(lambda: free() == expected, 30, f"free devices per class {expected}")
