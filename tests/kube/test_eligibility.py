"""Eligible nodes: nodeSelector, required node affinity, taints and tolerations, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.kube.eligibility import eligible, requirement_holds, tolerates
from exporter.kube.transform import constraints_of, node_record
from tests.kube.objects import node, pod, required_affinity, taint

GPU_TAINT = ("nvidia.com/gpu", "present", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint_", "expected"),
    [
        (("nvidia.com/gpu", "Exists", "", ""), GPU_TAINT, True),
        (("nvidia.com/gpu", "Exists", "", "NoSchedule"), GPU_TAINT, True),
        (("nvidia.com/gpu", "Exists", "", "NoExecute"), GPU_TAINT, False),
        (("nvidia.com/gpu", "Equal", "present", ""), GPU_TAINT, True),
        (("nvidia.com/gpu", "Equal", "other", ""), GPU_TAINT, False),
        (("nvidia.com/gpu", "", "present", "NoSchedule"), GPU_TAINT, True),  # operator defaults to Equal
        (("other", "Exists", "", ""), GPU_TAINT, False),
        (("", "Exists", "", ""), GPU_TAINT, True),  # tolerate everything
        (("", "Exists", "", "NoExecute"), GPU_TAINT, False),
    ],
)
def test_tolerates(toleration: Any, taint_: Any, expected: Any) -> None:
    assert tolerates(toleration, taint_) is expected


@pytest.mark.parametrize(
    ("operator", "values", "label", "expected"),
    [
        ("In", ("H100", "A100"), "H100", True),
        ("In", ("H100",), "L4", False),
        ("In", ("H100",), None, False),
        ("NotIn", ("L4",), "H100", True),
        ("NotIn", ("L4",), "L4", False),
        ("NotIn", ("L4",), None, True),
        ("Exists", (), "x", True),
        ("Exists", (), None, False),
        ("DoesNotExist", (), None, True),
        ("DoesNotExist", (), "x", False),
        ("Gt", ("40000",), "81920", True),
        ("Gt", ("81920",), "81920", False),
        ("Lt", ("81920",), "40960", True),
        ("Lt", ("1",), "not-a-number", False),
        ("Gt", ("1",), None, False),
        ("Bogus", (), "x", False),
    ],
)
def test_requirement(operator: Any, values: Any, label: Any, expected: Any) -> None:
    assert requirement_holds(("k", operator, values), label) is expected


H100 = node("h100-1", 8, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "pool": "inference"})
TAINTED = node("h100-2", 8, labels={"pool": "inference"}, taints=[taint("nvidia.com/gpu", value="present")])
SOFT = node("h100-3", 8, taints=[taint("maintenance", "PreferNoSchedule")])
TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
PRODUCT_IN = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}


@pytest.mark.parametrize(
    ("node_obj", "pod_kwargs", "expected"),
    [
        (H100, {}, True),
        (H100, {"node_selector": {"pool": "inference"}}, True),
        (H100, {"node_selector": {"pool": "training"}}, False),
        (H100, {"node_selector": {"pool": "inference", "zone": "a"}}, False),
        (H100, {"affinity": required_affinity(PRODUCT_IN)}, True),
        (SOFT, {"affinity": required_affinity(PRODUCT_IN)}, False),
        (
            H100,
            {"affinity": required_affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["h100-1"]}])},
            True,
        ),
        (
            SOFT,
            {"affinity": required_affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["h100-1"]}])},
            False,
        ),
        (
            H100,
            {
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
                }
            },
            False,
        ),  # no terms: nothing matches
        (
            H100,
            {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 1, "preference": {"matchExpressions": [PRODUCT_IN]}}
                        ]
                    }
                }
            },
            True,
        ),  # preferences only score
        (TAINTED, {}, False),
        (TAINTED, {"tolerations": TOLERATE_GPU}, True),
        (TAINTED, {"tolerations": TOLERATE_GPU, "node_selector": {"pool": "training"}}, False),
        (SOFT, {}, True),  # PreferNoSchedule does not block
    ],
)
def test_eligible(node_obj: Any, pod_kwargs: Any, expected: Any) -> None:
    constraints = constraints_of(pod("p", 1, **pod_kwargs)["spec"])
    assert eligible(node_record(node_obj), constraints) is expected


def test_affinity_terms_are_ored() -> None:
    other = {"key": "pool", "operator": "In", "values": ["training"]}
    spec = pod("p", 1, affinity=required_affinity(other))["spec"]
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].append(
        {"matchExpressions": [PRODUCT_IN]}
    )
    assert eligible(node_record(H100), constraints_of(spec))


def test_replicas_share_one_constraints_object() -> None:
    a = constraints_of(pod("vllm-0", 1, node_selector={"pool": "inference"}, tolerations=TOLERATE_GPU)["spec"])
    b = constraints_of(pod("vllm-1", 1, node_selector={"pool": "inference"}, tolerations=TOLERATE_GPU)["spec"])
    assert a is b


def test_a_cordoned_or_not_ready_node_admits_only_pods_that_tolerate_it() -> None:
    # the real kube-scheduler places a pod that tolerates node.kubernetes.io/unschedulable on a cordoned node
    from exporter.kube.eligibility import admits
    from exporter.kube.records import Constraints, NodeRecord

    cordoned, not_ready = NodeRecord("c", cordoned=True), NodeRecord("r", ready=False)
    plain = Constraints()
    everything = Constraints(tolerations=(("", "Exists", "", ""),))
    cordon_only = Constraints(tolerations=(("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),))
    assert not admits(cordoned, plain) and not admits(not_ready, plain)
    assert admits(cordoned, everything) and admits(not_ready, everything)
    assert admits(cordoned, cordon_only) and not admits(not_ready, cordon_only)
    assert admits(NodeRecord("ok"), plain)
