"""Records, capacity, DRA counting, the pending reasons and the exposition, from real-shaped objects."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.exposition import render
from exporter.kube import render as kube_render
from exporter.kube.dra import dra_capacity
from exporter.kube.records import ClaimRecord, NodeRecord, PodRecord, SliceRecord
from exporter.kube.room import Standing, classify, room_of
from exporter.kube.transform import claim_record, node_record, pod_record, slice_record
from exporter.kube.view import ClusterView, compute
from exporter.sources.kube_reflector import key_of
from tests.kube.objects import GPU, container, node, pod, resource_claim, resource_slice, taint

MIG = "nvidia.com/mig-1g.10gb"


def view(objects: list[dict[str, Any]]) -> ClusterView:
    nodes: dict[str, NodeRecord] = {}
    pods: dict[str, PodRecord] = {}
    slices: dict[str, SliceRecord] = {}
    claims: dict[str, ClaimRecord] = {}
    for obj in objects:
        kind = obj["kind"]
        if kind == "Node":
            nodes[key_of(obj)] = node_record(obj)
        elif kind == "Pod" and (p := pod_record(obj)) is not None:
            pods[key_of(obj)] = p
        elif kind == "ResourceSlice" and (s := slice_record(obj)) is not None:
            slices[key_of(obj)] = s
        elif kind == "ResourceClaim":
            claims[key_of(obj)] = claim_record(obj)
    return compute(nodes, pods, slices, claims)


def free_of(v: ClusterView) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {(u.node, u.resource): (u.allocatable, u.allocated, u.free) for u in v.usage}


def reasons(v: ClusterView) -> dict[str, str]:
    return {f"{p.pod}:{p.resource}": p.reason for p in v.pending}


@pytest.mark.parametrize(
    ("requested", "free", "reason"),
    [
        (4, [2, 2, 1, 1], "fragmented"),
        (2, [2, 2, 1, 1], "fits"),
        (7, [2, 2, 1, 1], "insufficient"),
        (6, [2, 2, 1, 1], "fragmented"),
        (1, [], "constrained"),
        (1, [0, 0], "insufficient"),
    ],
)
def test_classify(requested: Any, free: Any, reason: Any) -> None:
    assert classify(requested, room_of(Standing(f) for f in free)) == reason


def two_two_one_one() -> list[dict[str, Any]]:
    """Four 8-GPU nodes with 2, 2, 1 and 1 GPUs free."""
    objects = [node(f"gpu-{i}", 8) for i in range(4)]
    for i, used in enumerate((6, 6, 7, 7)):
        objects.append(pod(f"train-{i}", used, namespace="batch", node=f"gpu-{i}"))
    return objects


def test_fragmented_two_two_one_one() -> None:
    v = view([*two_two_one_one(), pod("vllm-big-0", 4, namespace="demo"), pod("vllm-small-0", 2, namespace="demo")])
    assert free_of(v)[("gpu-0", "nvidia.com/gpu")] == (8, 6, 2)
    assert v.free == {"nvidia.com/gpu": (6, 2)}
    # the small one has room on gpu-0 and nothing else holds it: only the scheduler's retry is missing
    assert reasons(v) == {"vllm-big-0:nvidia.com/gpu": "fragmented", "vllm-small-0:nvidia.com/gpu": "backoff"}


def test_insufficient_and_constrained() -> None:
    objects = [*two_two_one_one(), pod("huge-0", 8), pod("picky-0", 1, node_selector={"pool": "none"})]
    assert reasons(view(objects)) == {"huge-0:nvidia.com/gpu": "insufficient", "picky-0:nvidia.com/gpu": "constrained"}


def test_cordoned_and_not_ready_nodes_are_not_free_capacity() -> None:
    objects = [node("a", 4, unschedulable=True), node("b", 4, ready=False), node("c", 2), pod("p-0", 3)]
    v = view(objects)
    assert v.schedulable == {"a": False, "b": False, "c": True}
    assert v.free == {"nvidia.com/gpu": (2, 2)}  # a and b have 4 free each, but nothing can land there
    assert free_of(v)[("a", "nvidia.com/gpu")] == (4, 0, 4)
    assert reasons(v) == {"p-0:nvidia.com/gpu": "insufficient"}


def test_tainted_node_needs_a_toleration() -> None:
    tainted = node("t", 4, taints=[taint("nvidia.com/gpu", value="present")])
    tolerating = pod("tol-0", 4, tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
    v = view([tainted, node("small", 1), pod("plain-0", 4), tolerating])
    assert reasons(v) == {"plain-0:nvidia.com/gpu": "insufficient", "tol-0:nvidia.com/gpu": "backoff"}


def test_init_containers_count_by_the_scheduler_rule() -> None:
    init_heavy = pod("init-0", node="a", containers=[container("main", 1)], init_containers=[container("i", 3)])
    sidecars = pod(
        "side-0",
        node="a",
        containers=[container("main", 1)],
        init_containers=[container("s", 1, restartPolicy="Always")],
    )
    assert free_of(view([node("a", 8), init_heavy, sidecars]))[("a", "nvidia.com/gpu")] == (8, 5, 3)


def test_finished_pods_hold_nothing_bound_pending_pods_hold() -> None:
    objects = [
        node("a", 8),
        pod("done-0", 4, node="a", phase="Succeeded"),
        pod("failed-0", 2, node="a", phase="Failed"),
        pod("starting-0", 3, node="a", phase="Pending"),  # bound, image still pulling: holds its GPUs
    ]
    v = view(objects)
    assert free_of(v)[("a", "nvidia.com/gpu")] == (8, 3, 5)
    assert v.pending == []  # a bound pod is not waiting for placement


def test_gated_pods_say_which_gate_and_unseen_pods_are_not_classified() -> None:
    fresh = pod("fresh-0", 1)
    fresh["status"].pop("conditions")  # the scheduler has not looked at it yet
    objects = [
        node("a", 8),
        pod("queued-0", 1, scheduling_gates=["kueue.x-k8s.io/admission"]),  # Kueue: no quota admitted yet
        pod("held-0", 1, scheduling_gates=["example.com/wait-for-weights"]),
        fresh,
    ]
    assert reasons(view(objects)) == {"queued-0:nvidia.com/gpu": "quota", "held-0:nvidia.com/gpu": "gated"}


def test_mig_and_time_sliced_resources_are_separate() -> None:
    objects = [
        node("mig", {MIG: 7, "nvidia.com/mig-3g.40gb": 2}),
        node("shared", {"nvidia.com/gpu.shared": 40}),
        pod("mig-user", 3, resource=MIG, node="mig"),
        pod("share-user", 10, resource="nvidia.com/gpu.shared", node="shared"),
        pod("mig-wait", 5, resource=MIG),
        pod("whole-wait", 1),
    ]
    v = view(objects)
    assert free_of(v) == {
        ("mig", "nvidia.com/mig-3g.40gb"): (2, 0, 2),
        ("mig", MIG): (7, 3, 4),
        ("shared", "nvidia.com/gpu.shared"): (40, 10, 30),
    }
    assert reasons(v) == {f"mig-wait:{MIG}": "insufficient", "whole-wait:nvidia.com/gpu": "constrained"}


def test_dra_devices_minus_allocated_claims_per_driver() -> None:
    objects = [
        node("dra-a"),
        node("dra-b"),
        resource_slice("dra-a", 4),
        resource_slice("dra-b", 2),
        resource_claim("run-0-gpus", count=3, allocated=[("gpu.nvidia.com", "dra-a", f"gpu-{i}") for i in range(3)]),
        resource_claim("dbg", allocated=[("gpu.nvidia.com", "dra-b", "gpu-0")], admin_access=True),
        resource_claim("wait-0-gpus", count=2),
        pod("wait-0", claims=[{"name": "gpus", "resourceClaimName": "wait-0-gpus"}]),
    ]
    v = view(objects)
    assert free_of(v) == {("dra-a", "gpu.nvidia.com"): (4, 3, 1), ("dra-b", "gpu.nvidia.com"): (2, 0, 2)}
    assert reasons(v) == {"wait-0:gpu.nvidia.com": "backoff"}


def test_dra_newest_pool_generation_and_shared_counters() -> None:
    old = resource_slice("n", 8, generation=1, name="old")
    new = resource_slice("n", ["gpu-0", "gpu-0-mig-1g"], generation=2, name="new")
    new["spec"]["devices"][1]["attributes"]["type"] = {"string": "mig"}
    for device in new["spec"]["devices"]:
        device["consumesCounters"] = [{"counterSet": "gpu-0-counters", "counters": {}}]
    claim = claim_record(resource_claim("c", allocated=[("gpu.nvidia.com", "n", "gpu-0-mig-1g")]))
    records = [r for r in map(slice_record, [old, new]) if r is not None]
    # generation 1 is being replaced; the MIG partition in use makes its GPU busy; partitions are not GPUs
    assert dra_capacity(records, [claim]) == {("n", "gpu.nvidia.com"): [1, 1]}


def test_pod_records_keep_only_what_is_needed() -> None:
    assert pod_record(pod("cpu-only-0")) is None  # unbound and without GPUs: constrains nobody
    bound = pod_record(pod("cpu-only-1", node="a"))  # its cpu and labels count for GPU pods on node a
    assert bound is not None and bound.traits.other == (("cpu", 1000), ("memory", 2**30))
    assert pod_record(pod("done-0", 1, node="a", phase="Succeeded")) is None
    record = pod_record(pod("vllm-0", 2, namespace="ml", node_selector={"pool": "x"}))
    assert record is not None
    assert (record.namespace, record.name, record.node, record.requests) == (
        "ml",
        "vllm-0",
        "",
        (("nvidia.com/gpu", 2),),
    )
    assert record.waiting_for_placement and record.constraints.node_selector == (("pool", "x"),)


def test_exposition_of_a_small_cluster() -> None:
    objects = [
        node("gpu-0", 8),
        node("gpu-1", 8, unschedulable=True),
        pod("train-0", 6, namespace="batch", node="gpu-0"),
        pod("vllm-big-0", 4, namespace="demo"),
        pod("vllm-huge-0", 16, namespace="demo"),
    ]
    text = render(kube_render.view_families(view(objects), max_pending_pods=1))
    assert text == (
        "# HELP llm_node_gpus_allocatable GPUs (or slices, shares, devices) the node offers; DRA devices per "
        "DeviceClass that selects them.\n"
        "# TYPE llm_node_gpus_allocatable gauge\n"
        'llm_node_gpus_allocatable{node="gpu-0",resource="nvidia.com/gpu"} 8\n'
        'llm_node_gpus_allocatable{node="gpu-1",resource="nvidia.com/gpu"} 8\n'
        "# HELP llm_node_gpus_allocated GPUs requested by the pods bound to the node that have not finished.\n"
        "# TYPE llm_node_gpus_allocated gauge\n"
        'llm_node_gpus_allocated{node="gpu-0",resource="nvidia.com/gpu"} 6\n'
        'llm_node_gpus_allocated{node="gpu-1",resource="nvidia.com/gpu"} 0\n'
        "# HELP llm_node_gpus_free Allocatable minus allocated.\n"
        "# TYPE llm_node_gpus_free gauge\n"
        'llm_node_gpus_free{node="gpu-0",resource="nvidia.com/gpu"} 2\n'
        'llm_node_gpus_free{node="gpu-1",resource="nvidia.com/gpu"} 8\n'
        "# HELP llm_node_schedulable 1 when the node is Ready and not cordoned (nodes that offer or hold a GPU "
        "resource).\n"
        "# TYPE llm_node_schedulable gauge\n"
        'llm_node_schedulable{node="gpu-0"} 1\n'
        'llm_node_schedulable{node="gpu-1"} 0\n'
        "# HELP llm_cluster_gpus_free Free GPUs summed over schedulable nodes.\n"
        "# TYPE llm_cluster_gpus_free gauge\n"
        'llm_cluster_gpus_free{resource="nvidia.com/gpu"} 2\n'
        "# HELP llm_cluster_gpus_largest_free_block The largest free count on one schedulable node: the biggest "
        "request that can be placed now.\n"
        "# TYPE llm_cluster_gpus_largest_free_block gauge\n"
        'llm_cluster_gpus_largest_free_block{resource="nvidia.com/gpu"} 2\n'
        "# HELP llm_pending_pod_gpus_requested GPUs requested by an unschedulable or gated pod, with the reason it "
        "cannot be placed: fragmented, insufficient, constrained, other_resources, pod_affinity, topology_spread, "
        "fits, quota, gated or backoff.\n"
        "# TYPE llm_pending_pod_gpus_requested gauge\n"
        'llm_pending_pod_gpus_requested{namespace="demo",pod="vllm-big-0",resource="nvidia.com/gpu",'
        'reason="insufficient"} 4\n'
        "# HELP llm_cluster_pending_pods Unschedulable or gated GPU pods by resource and reason, all of them "
        "(llm_pending_pod_gpus_requested is bounded).\n"
        "# TYPE llm_cluster_pending_pods gauge\n"
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="backoff"} 0\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="constrained"} 0\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="fits"} 0\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="fragmented"} 0\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="gated"} 0\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="insufficient"} 2\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="other_resources"} 0\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="pod_affinity"} 0\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="quota"} 0\n'
        'llm_cluster_pending_pods{resource="nvidia.com/gpu",reason="topology_spread"} 0\n'
        "# HELP llm_pending_pods_truncated Unschedulable GPU pod series left out of llm_pending_pod_gpus_requested "
        "by cluster.max_pending_pods.\n"
        "# TYPE llm_pending_pods_truncated gauge\n"
        "llm_pending_pods_truncated 1\n"
        "# HELP llm_node_gpus_unhealthy GPUs the node has but does not offer: capacity minus allocatable (the "
        "device plugin withdraws a GPU it finds unhealthy; a device plugin that stopped reports capacity and "
        "allocatable 0).\n"
        "# TYPE llm_node_gpus_unhealthy gauge\n"
        'llm_node_gpus_unhealthy{node="gpu-0",resource="nvidia.com/gpu"} 0\n'
        'llm_node_gpus_unhealthy{node="gpu-1",resource="nvidia.com/gpu"} 0\n'
    )


def model_slice(node_name: str, models: list[str], driver: str = "gpu.example.com") -> dict[str, Any]:
    """A resource.k8s.io/v1 slice whose devices carry a `model` attribute, as the example driver's do."""
    obj = resource_slice(node_name, len(models), driver=driver)
    for device, model in zip(obj["spec"]["devices"], models, strict=True):
        device["attributes"] = {"model": {"string": model}, "type": {"string": "gpu"}}
    return obj


def test_dra_counts_per_device_class_by_its_selectors() -> None:
    """H100s free 2/2/0 on three nodes, four A100s free on a fourth, a claim for 3 H100s: fragmented."""
    from exporter.kube.deviceclass import class_record

    driver = "gpu.example.com"
    h100 = class_record(
        {
            "metadata": {"name": "h100"},
            "spec": {"selectors": [{"cel": {"expression": f'device.attributes["{driver}"].model == "h100"'}}]},
        }
    )
    objects = [node(n) for n in ("h-0", "h-1", "h-2", "a-0")]
    objects += [model_slice(n, ["h100"] * 2) for n in ("h-0", "h-1", "h-2")]
    objects.append(model_slice("a-0", ["a100"] * 4))
    taken = [(driver, "h-2", "gpu-0"), (driver, "h-2", "gpu-1")]
    objects += [resource_claim("busy", device_class="h100", count=2, allocated=taken)]
    objects += [resource_claim("big-0-gpus", device_class="h100", count=3)]
    objects.append(pod("big-0", claims=[{"name": "gpus", "resourceClaimName": "big-0-gpus"}]))
    nodes = {key_of(o): node_record(o) for o in objects if o["kind"] == "Node"}
    pods = {key_of(o): r for o in objects if o["kind"] == "Pod" and (r := pod_record(o)) is not None}
    slices = {key_of(o): s for o in objects if o["kind"] == "ResourceSlice" and (s := slice_record(o)) is not None}
    claims = {key_of(o): claim_record(o) for o in objects if o["kind"] == "ResourceClaim"}
    v = compute(nodes, pods, slices, claims, classes={"h100": h100})
    # the A100s, which no class selects, stay under the driver's name: the models are no longer mixed
    assert free_of(v) == {
        ("a-0", driver): (4, 0, 4),
        ("h-0", "h100"): (2, 0, 2),
        ("h-1", "h100"): (2, 0, 2),
        ("h-2", "h100"): (2, 2, 0),
    }
    assert reasons(v) == {"big-0:h100": "fragmented"}
    # without the class the claim is counted against the driver's devices alike, and wrongly fits
    assert reasons(compute(nodes, pods, slices, claims, lambda c: driver)) == {f"big-0:{driver}": "backoff"}


def test_bound_pods_with_the_same_labels_but_other_resources_are_read_each_as_they_are() -> None:
    """Replicas share their record's shape by labels; a pod with equal labels but other requests, init
    containers or anti-affinity is read afresh."""
    one = pod_record(pod("w-0", 1, node="a"))
    two = pod_record(pod("w-1", 2, node="a"))  # the same labels ({"app": "w"}), two GPUs
    sidecar = pod("w-2", 1, node="a", init_containers=[container("s", 1, restartPolicy="Always")])
    apart = pod("w-3", 1, node="a")
    apart["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    records = [one, two, pod_record(sidecar), pod_record(apart), pod_record(pod("w-4", 1, node="a"))]
    assert all(r is not None for r in records)
    assert [r.requests for r in records if r] == [((GPU, 1),), ((GPU, 2),), ((GPU, 2),), ((GPU, 1),), ((GPU, 1),)]
    assert [bool(r.traits.anti_affinity) for r in records if r] == [False, False, False, True, False]
    assert records[0] and records[4] and records[0].traits is records[4].traits  # replicas share one shape
