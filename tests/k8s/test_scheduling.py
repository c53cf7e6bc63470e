"""`exporter.k8s.scheduling` on manifests answers as the cluster view's eligibility does on the API server's
objects (`exporter.kube.transform` + `exporter.kube.eligibility`, checked against a real kube-scheduler)."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.k8s import scheduling
from exporter.kube.eligibility import eligible
from exporter.kube.transform import constraints_of, node_record
from tests.kube.objects import node, pod, required_affinity, taint

GPU_TAINT = taint("nvidia.com/gpu", value="present")
A100 = node("a100", 8, labels={"pool": "a100", "gpu-memory": "40960"})
H100 = node("h100", 8, labels={"pool": "h100", "gpu-memory": "81920"}, taints=[GPU_TAINT])
TRAINING = node("train", 8, labels={"pool": "training"})
BARE = node("bare", 8)
SOFT = node("soft", 8, labels={"pool": "a100"}, taints=[taint("maintenance", "PreferNoSchedule")])
NODES = [A100, H100, TRAINING, BARE, SOFT]
TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def terms(*ored: list[dict[str, Any]]) -> dict[str, Any]:
    """Required node affinity: one nodeSelectorTerm per list of expressions."""
    selector_terms = [{"matchExpressions": t} for t in ored]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": selector_terms}}}


PODS = {
    "no constraints": pod("p", 1),
    "selector": pod("p", 1, node_selector={"pool": "a100"}),
    "terms ORed": pod("p", 1, affinity=terms([expr("pool", "In", "a100")], [expr("pool", "In", "h100")])),
    "expressions ANDed": pod("p", 1, affinity=terms([expr("pool", "Exists"), expr("pool", "NotIn", "training")])),
    "NotIn": pod("p", 1, affinity=required_affinity(expr("pool", "NotIn", "training"))),
    "DoesNotExist": pod("p", 1, affinity=required_affinity(expr("pool", "DoesNotExist"))),
    "Gt": pod("p", 1, affinity=required_affinity(expr("gpu-memory", "Gt", "50000"))),
    "Lt": pod("p", 1, affinity=required_affinity(expr("gpu-memory", "Lt", "50000"))),
    "by name": pod(
        "p", 1, affinity=required_affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["h100"]}])
    ),
    "tolerates the GPU taint": pod("p", 1, tolerations=TOLERATE_GPU),
    "tolerates everything": pod("p", 1, tolerations=[{"operator": "Exists"}]),
    "empty term list": pod("p", 1, affinity=terms()),
}


@pytest.mark.parametrize("case", sorted(PODS))
def test_the_same_nodes_as_the_cluster_view(case: str) -> None:
    spec = PODS[case]["spec"]
    cluster_view = [n["metadata"]["name"] for n in NODES if eligible(node_record(n), constraints_of(spec))]
    read = scheduling.constraints(spec)
    here = [
        n["metadata"]["name"]
        for n in NODES
        if scheduling.allows(read, n["metadata"]["name"], n["metadata"]["labels"], scheduling.taints(n["spec"]))
    ]
    assert here == cluster_view


def test_the_expected_nodes() -> None:
    """The table above, spelled out (so the parity is not two equal mistakes)."""

    def allowed(case: str, taints: bool = True) -> list[str]:
        c = scheduling.constraints(PODS[case]["spec"])
        return [
            n["metadata"]["name"]
            for n in NODES
            if scheduling.allows(
                c, n["metadata"]["name"], n["metadata"]["labels"], scheduling.taints(n["spec"]) if taints else None
            )
        ]

    assert allowed("terms ORed") == ["a100", "soft"]  # h100 is tainted
    assert allowed("terms ORed", taints=False) == ["a100", "h100", "soft"]
    assert allowed("NotIn") == ["a100", "bare", "soft"]  # an absent label is not in the set
    assert allowed("expressions ANDed") == ["a100", "soft"]
    assert allowed("DoesNotExist") == ["bare"]
    assert allowed("Gt", taints=False) == ["h100"] and allowed("Lt") == ["a100"]
    assert allowed("by name", taints=False) == ["h100"]
    assert allowed("tolerates the GPU taint") == ["a100", "h100", "train", "bare", "soft"]
    assert allowed("empty term list") == []


def test_a_malformed_manifest_reads_as_unset() -> None:
    spec = {"nodeSelector": "pool=a100", "tolerations": "all", "affinity": {"nodeAffinity": []}}
    c = scheduling.constraints(spec)
    assert (c.node_selector, c.affinity, c.tolerations) == ((), None, ())
    broken_term = {"affinity": required_affinity({"operator": "In"})}  # no key, no values
    assert not scheduling.allows(scheduling.constraints(broken_term), "a100", {"pool": "a100"})
