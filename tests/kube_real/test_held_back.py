"""Pending with free GPUs, against the real kube-scheduler: idle GPUs that another filter holds back are named
by that filter, and fragmentation is not hidden by the cpu the GPU pods hold.

Each scenario asserts the scheduler's own FailedScheduling verdict, reads the nodes' standings off it (and
off the same pod without GPUs where the scheduler stopped at its first failing filter), and holds the
exporter's reason to the judge's (`scenario.expected_reason`). Where the answer is "move GPU pods" or
"free what pods without GPUs hold", the scenario then does just that and the scheduler binds the pod: the
fix the reason names is the one that works.
"""

from __future__ import annotations

from typing import Any

from exporter.kube.collector import ClusterCollector
from tests.kube_real.gpu_cluster import GPU
from tests.kube_real.scenario import HOST, ZONE, Run, anti_affinity, expected_reason, exporter_says, uniformly

Obj = dict[str, Any]
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"


def requesting(pod: Obj, cpu: str, memory: str = "1Gi") -> Obj:
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": cpu, "memory": memory}
    return pod


def pinned(run: Run, name: str, node: str, gpus: int = 0, **spec: Any) -> Obj:
    """A pod for one node only (nodeSelector on its hostname)."""
    return run.pod(name, gpus, nodeSelector={HOST: node}, **spec)


def create_bound(run: Run, pod: Obj) -> str:
    run.create(pod)
    return run.wait_bound(pod["metadata"]["name"])


def delete(run: Run, *names: str) -> None:
    for name in names:
        run.cluster.must("DELETE", f"/api/v1/namespaces/{run.namespace}/pods/{name}", {"gracePeriodSeconds": 0})


def test_free_gpus_on_a_node_whose_cpu_a_pod_without_gpus_holds(scenario: Run, collector: ClusterCollector) -> None:
    """4 GPUs free on n0, whose cpu an ETL pod holds; n1 GPU-full. Not `insufficient`: more GPUs would not help."""
    n0, n1 = scenario.node("0", gpus=4), scenario.node("1", gpus=4)
    scenario.ready()
    create_bound(scenario, requesting(pinned(scenario, "etl-0", n0), cpu="62"))
    create_bound(scenario, requesting(pinned(scenario, "busy-0", n1, gpus=4), cpu="1"))
    vllm = requesting(scenario.pod("vllm-0", 2, labels={"app": "vllm"}), cpu="4", memory="16Gi")
    scenario.create(vllm)
    # n1 lacks GPUs only (its free count is 0), so n0, with 4 free, is the node short of cpu
    assert scenario.verdict("vllm-0") == {"Insufficient cpu": 1, f"Insufficient {GPU}": 1}
    assert scenario.what_else_blocks(vllm) == {}  # without GPUs it schedules (on n1): nothing else blocks there
    standings = scenario.standings(vllm, {n0: "other_resources", n1: None})
    assert standings == [(4, "other_resources"), (0, None)]
    reason = expected_reason(2, standings)
    assert reason == "other_resources"
    exporter_says(collector, scenario, "vllm-0", (GPU, reason))
    delete(scenario, "etl-0")  # free what the pod without GPUs held
    assert scenario.wait_bound("vllm-0") == n0


def test_free_gpus_only_where_pod_anti_affinity_forbids(scenario: Run, collector: ClusterCollector) -> None:
    """n0 runs a replica and has 2 GPUs free, n1 is GPU-full: the second replica waits on its anti-affinity."""
    n0, n1 = scenario.node("0", gpus=4), scenario.node("1", gpus=4)
    scenario.ready()
    create_bound(scenario, pinned(scenario, "busy-0", n1, gpus=4))
    replicas = [scenario.pod(f"vllm-{i}", 2, labels={"app": "vllm"}, affinity=anti_affinity("vllm")) for i in range(2)]
    assert create_bound(scenario, replicas[0]) == n0
    scenario.create(replicas[1])
    assert scenario.verdict("vllm-1") == {ANTI_AFFINITY: 1, f"Insufficient {GPU}": 1}
    assert scenario.what_else_blocks(replicas[1]) == {}  # without GPUs it schedules (on n1)
    reason = expected_reason(2, scenario.standings(replicas[1], {n0: "pod_affinity", n1: None}))
    assert reason == "pod_affinity"
    exporter_says(collector, scenario, "vllm-1", (GPU, reason))


def test_free_gpus_only_in_the_zone_a_spread_constraint_forbids(scenario: Run, collector: ClusterCollector) -> None:
    """Zone a runs a replica and has 3 GPUs free; zone b's node is GPU-full: maxSkew 1 keeps the next out of a."""
    a0 = scenario.node("a", gpus=4, labels={ZONE: "a"})
    b0 = scenario.node("b", gpus=4, labels={ZONE: "b"})
    scenario.ready()
    create_bound(scenario, pinned(scenario, "busy-0", b0, gpus=4))
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
    assert create_bound(scenario, replicas[0]) == a0
    scenario.create(replicas[1])
    # a0 passed the resources and failed the spread; b0 failed on GPUs only (one more replica there is skew 1).
    # No GPU-less probe here: one bound in zone b would even out the skew and let spread-1 into zone a.
    assert scenario.verdict("spread-1") == {SPREAD: 1, f"Insufficient {GPU}": 1}
    reason = expected_reason(1, scenario.standings(replicas[1], {a0: "topology_spread", b0: None}))
    assert reason == "topology_spread"
    exporter_says(collector, scenario, "spread-1", (GPU, reason))


def test_fragmentation_hidden_by_the_cpu_the_gpu_pods_hold(scenario: Run, collector: ClusterCollector) -> None:
    """Four nodes of 8 GPUs and 64 cpu, each running three 2-GPU pods of 8 cpu and a 12-cpu app; an 8-GPU pod
    asking 32 cpu. 2 GPUs and 28 cpu free per node, both too few; moving the small pods frees both."""
    nodes = [scenario.node(str(i), gpus=8) for i in range(4)]
    scenario.ready()
    for i, node in enumerate(nodes):
        create_bound(scenario, requesting(pinned(scenario, f"app-{i}", node), cpu="12"))
        for j in range(3):
            small = pinned(scenario, f"vllm-small-{i}{j}", node, gpus=2, labels={"app": "vllm-small"})
            create_bound(scenario, requesting(small, cpu="8", memory="32Gi"))
    big = requesting(scenario.pod("vllm-big-0", 8, labels={"app": "vllm-big"}), cpu="32", memory="128Gi")
    scenario.create(big)
    assert scenario.verdict("vllm-big-0") == {"Insufficient cpu": 4, f"Insufficient {GPU}": 4}
    refused = uniformly(scenario.what_else_blocks(big), nodes)  # without GPUs: still short of cpu everywhere
    assert refused == dict.fromkeys(nodes, "other_resources")
    standings = scenario.standings(big, refused)
    assert standings == [(2, None)] * 4  # 64 − 12 cpu would be free once the GPU pods moved
    reason = expected_reason(8, standings)
    assert reason == "fragmented"
    exporter_says(collector, scenario, "vllm-big-0", (GPU, reason))
    delete(scenario, *(f"vllm-small-3{j}" for j in range(3)))  # move the small pods off one node
    assert scenario.wait_bound("vllm-big-0") == nodes[3]
