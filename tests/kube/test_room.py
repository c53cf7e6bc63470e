"""Would moving GPU pods, or freeing what non-GPU pods hold, let it run? (exporter/kube/room.py)

The classifier on its own (per-node standings), then the reasons from real-shaped objects for the cases
of the write-ups and the scheduler: idle GPUs held back by another filter, and fragmentation that the cpu
of the GPU pods would have hidden; last, the per-shape figures against the node-by-node definition.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.kube.capacity import node_usage
from exporter.kube.eligibility import admits
from exporter.kube.placement import AffinityState, PodIndex, SpreadState, fits_other_resources
from exporter.kube.room import Placer, Room, Standing, classify, room_of
from exporter.kube.transform import node_record, pod_record
from tests.kube.objects import container, node, pod
from tests.kube.test_placement import ZONE, anti_affinity, cpu_pod, labelled, reasons, spread

Obj = dict[str, Any]
FREE = Standing  # a node nothing rules out, where the pod's other requests fit now


@pytest.mark.parametrize(
    ("requested", "nodes", "reason"),
    [
        (1, [], "constrained"),
        (2, [FREE(2), Standing(4, "topology_spread")], "fits"),
        (4, [FREE(2), FREE(2), FREE(1), FREE(1)], "fragmented"),  # 2/2/1/1
        # the GPU pods' cpu is in the way everywhere: moving them frees both on one node
        (8, [Standing(2, fits_now=False)] * 4, "fragmented"),
        (2, [Standing(4, fits_now=False)], "fragmented"),
        # the GPUs that would suffice are where a filter rules the node out whatever is moved
        (2, [Standing(4, "other_resources"), FREE(0)], "other_resources"),
        (2, [Standing(2, "pod_affinity"), FREE(0)], "pod_affinity"),
        (1, [Standing(3, "topology_spread"), FREE(0)], "topology_spread"),
        (2, [Standing(1, "pod_affinity"), Standing(1, "pod_affinity")], "pod_affinity"),  # the third replica
        (4, [FREE(2), Standing(2, "other_resources")], "other_resources"),
        # several filters: the one holding back the most free GPUs, ties to the scheduler's earlier filter
        (4, [Standing(1, "other_resources"), Standing(3, "pod_affinity")], "pod_affinity"),
        (4, [Standing(2, "other_resources"), Standing(2, "pod_affinity")], "other_resources"),
        (4, [Standing(2, "pod_affinity"), Standing(2, "topology_spread")], "topology_spread"),
        # not enough on the eligible nodes at all, whatever rules them out
        (3, [Standing(1, "pod_affinity"), Standing(1, "other_resources"), FREE(0)], "insufficient"),
        (2, [Standing(0, "pod_affinity"), Standing(0, "pod_affinity")], "insufficient"),
        (7, [FREE(2), FREE(2), FREE(1), FREE(1)], "insufficient"),
    ],
)
def test_classify(requested: int, nodes: list[Standing], reason: str) -> None:
    assert classify(requested, room_of(nodes)) == reason


def test_room_of_counts_each_node_once() -> None:
    nodes = [FREE(2), Standing(3, fits_now=False), Standing(4, "other_resources"), Standing(1, "pod_affinity")]
    assert room_of(nodes) == Room(4, 2, 5, 10, {"other_resources": 4, "pod_affinity": 1})


# -- from real-shaped objects ------------------------------------------------------------------------------
def gpu_pod(name: str, gpus: int, cpu: str, node_name: str | None = None, **options: Any) -> Obj:
    main = container("main", gpus)
    main["resources"]["requests"]["cpu"] = cpu
    return pod(name, gpus, node=node_name, containers=[main], **options)


def cpu_node(name: str, gpus: int, cpu: str = "64", **options: Any) -> Obj:
    obj = node(name, gpus, **options)
    obj["status"]["allocatable"]["cpu"] = obj["status"]["capacity"]["cpu"] = cpu
    return obj


def test_free_gpus_on_a_node_whose_cpu_a_pod_without_gpus_holds() -> None:
    """4 GPUs free on n0, whose cpu an ETL pod holds; n1 GPU-full (scheduler: 1 Insufficient cpu, 1 Insufficient
    nvidia.com/gpu). More GPUs would not help: freeing the cpu would."""
    objects = [cpu_node("n0", 4), cpu_node("n1", 4), cpu_pod("etl-0", "62", "n0"), gpu_pod("busy-0", 4, "1", "n1")]
    objects.append(gpu_pod("vllm-0", 2, "4"))
    assert reasons(objects) == {"vllm-0": "other_resources"}
    # the same cpu held by a GPU pod on n0 moves with it: the free GPUs are fragmented, not held back
    objects[2] = gpu_pod("train-0", 1, "62", "n0")
    assert reasons(objects) == {"vllm-0": "fragmented"}
    # n0's GPUs taken too: nothing would suffice, whatever held the cpu
    objects[2] = gpu_pod("train-0", 4, "62", "n0")
    assert reasons(objects) == {"vllm-0": "insufficient"}


def test_free_gpus_only_where_pod_anti_affinity_forbids() -> None:
    """n0 runs a replica and has 2 GPUs free; n1 is GPU-full: the second replica waits on its anti-affinity."""
    rule = anti_affinity("vllm")
    objects = [node("n0", 4), node("n1", 4), pod("busy-0", 4, node="n1")]
    objects.append(labelled(pod("vllm-0", 2, node="n0", affinity=rule), app="vllm"))
    objects.append(labelled(pod("vllm-1", 2, affinity=rule), app="vllm"))
    assert reasons(objects) == {"vllm-1": "pod_affinity"}
    objects[-1] = labelled(pod("vllm-1", 3, affinity=rule), app="vllm")  # asks more than is free anywhere
    assert reasons(objects) == {"vllm-1": "insufficient"}


def test_free_gpus_only_in_the_zone_a_spread_constraint_forbids() -> None:
    """Zone a runs a replica and has 3 GPUs free; zone b's node is GPU-full: maxSkew 1 keeps the next out of a."""
    objects = [node("a0", 4, labels={ZONE: "a"}), node("b0", 4, labels={ZONE: "b"}), pod("busy-0", 4, node="b0")]
    objects.append(spread(labelled(pod("spread-0", 1, node="a0"), app="spread"), "spread"))
    objects.append(spread(labelled(pod("spread-1", 1), app="spread"), "spread"))
    assert reasons(objects) == {"spread-1": "topology_spread"}


def fragmented_in_small(app_cpu: str = "12") -> list[Obj]:
    """Four nodes of 8 GPUs and 64 cpu, each running three 2-GPU pods of 8 cpu and an app of `app_cpu`; an
    8-GPU pod asking 32 cpu (the scheduler: 4 Insufficient cpu, 4 Insufficient nvidia.com/gpu)."""
    objects = [cpu_node(f"n{i}", 8) for i in range(4)]
    for i in range(4):
        objects += [gpu_pod(f"vllm-small-{i}{j}", 2, "8", f"n{i}") for j in range(3)]
        objects.append(cpu_pod(f"app-{i}", app_cpu, f"n{i}"))
    return [*objects, gpu_pod("vllm-big-0", 8, "32")]


def test_fragmentation_hidden_by_the_cpu_the_gpu_pods_hold() -> None:
    """28 cpu and 2 GPUs free per node: both short of the 32 and 8 asked, both freed by moving the small pods."""
    assert reasons(fragmented_in_small()) == {"vllm-big-0": "fragmented"}
    # the apps (no GPUs) hold 40 cpu: no move of GPU pods makes 32 free on a node
    assert reasons(fragmented_in_small(app_cpu="40")) == {"vllm-big-0": "other_resources"}


def test_pod_slots_the_gpu_pods_hold_move_with_them() -> None:
    objects = [node("n0", 8), node("n1", 8)]
    for n in ("n0", "n1"):
        objects[int(n[1])]["status"]["allocatable"]["pods"] = "2"
        objects += [pod(f"small-{n}{j}", 3, node=n) for j in range(2)]
    objects.append(pod("big-0", 4))
    assert reasons(objects) == {"big-0": "fragmented"}
    objects[2] = cpu_pod("daemon-0", "10m", "n0")  # n0: a pod without GPUs holds a slot; n1 alone has 2 free
    objects[3] = cpu_pod("daemon-1", "10m", "n0")
    assert reasons(objects) == {"big-0": "other_resources"}


# -- the per-shape figures against the definition, node by node --------------------------------------------
def _scenario(draw: Any) -> list[Obj]:
    """Up to four nodes in two zones, bound pods with and without GPUs (some with anti-affinity, some of the
    waiting pods' own app, counted by their spread), and waiting pods with and without rules."""
    objects: list[Obj] = []
    nodes = draw(st.integers(1, 4))
    for n in range(nodes):
        objects.append(cpu_node(f"n{n}", draw(st.sampled_from((0, 2, 4, 8))), labels={ZONE: "ab"[n % 2]}))
    for i in range(draw(st.integers(0, 8))):
        where = f"n{draw(st.integers(0, nodes - 1))}"
        gpus, cpu = draw(st.sampled_from((0, 1, 2, 4))), draw(st.sampled_from(("1", "8", "30", "60")))
        bound = gpu_pod(f"w{i}-0", gpus, cpu, where) if gpus else cpu_pod(f"w{i}-0", cpu, where)
        labelled(bound, app=draw(st.sampled_from(("w", "vllm"))))
        if draw(st.booleans()):
            bound["spec"]["affinity"] = anti_affinity("vllm")
        objects.append(bound)
    for i in range(draw(st.integers(1, 3))):
        gpus, cpu = draw(st.sampled_from((1, 2, 4, 8))), draw(st.sampled_from(("1", "32")))
        waiting = labelled(gpu_pod(f"vllm-{i}", gpus, cpu), app="vllm")
        if draw(st.booleans()):
            waiting["spec"]["affinity"] = anti_affinity("w")
        if draw(st.booleans()):
            spread(waiting, "vllm")
        objects.append(waiting)
    return objects


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_room_of_each_shape_is_the_definition_node_by_node(data: st.DataObject) -> None:
    objects = _scenario(data.draw)
    nodes = {o["metadata"]["name"]: node_record(o) for o in objects if o["kind"] == "Node"}
    pods = [r for o in objects if o["kind"] == "Pod" and (r := pod_record(o)) is not None]
    index = PodIndex(nodes, pods)
    usage = node_usage(nodes, pods)
    placer = Placer(nodes, index, usage)
    for waiting in (p for p in pods if not p.node):
        spread_out = SpreadState(index, waiting).excluded() if waiting.traits.spread else set()
        affinity_out = AffinityState(index, waiting).excluded()
        standings = []
        for u in usage:
            n = nodes[u.node]
            if u.resource != "nvidia.com/gpu" or not u.allocatable or not admits(n, waiting.constraints):
                continue
            other = waiting.traits.other
            ruled_out = (
                "other_resources"
                if not fits_other_resources(index, n, other, gpu_pods=False)
                else "topology_spread"
                if n.name in spread_out
                else "pod_affinity"
                if n.name in affinity_out
                else None
            )
            standings.append(Standing(u.free, ruled_out, fits_other_resources(index, n, other)))
        assert placer.room(waiting, "nvidia.com/gpu") == room_of(standings)
