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

from typing import Any

from exporter.kube.collector import ClusterCollector
from tests.kube_real.gpu_cluster import GPU, exported_samples
from tests.kube_real.scenario import (
    HOST,
    SETTLE,
    ZONE,
    Run,
    anti_affinity,
    expected_reason,
    exporter_says,
    pending,
    uniformly,
)
from tests.kubecluster import wait_for

Obj = dict[str, Any]
DRA_DRIVER = "gpu.example.com"
H100_CLASS = "example-h100"
H100_SELECTOR = f'device.driver == "{DRA_DRIVER}" && device.attributes["{DRA_DRIVER}"].model == "h100"'


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
    refused = uniformly(scenario.what_else_blocks(replicas[2]), nodes)
    reason = expected_reason(2, scenario.standings(replicas[2], refused))
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
    standings = scenario.standings(vllm, uniformly(scenario.what_else_blocks(vllm), nodes))
    assert standings == [(4, "other_resources")] * 2  # the pods holding the cpu have no GPUs to move
    reason = expected_reason(2, standings)
    assert reason == "other_resources"
    exporter_says(collector, scenario, "vllm-0", (GPU, reason))


def test_topology_spread_over_a_zone_without_gpus(scenario: Run, collector: ClusterCollector) -> None:
    """Zone a has the GPUs, zone b only a cpu node: with maxSkew 1 the second replica may not go to a."""
    gpu_node = scenario.node("a", gpus=4, labels={ZONE: "a"})
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
    refused = uniformly(scenario.what_else_blocks(replicas[1]), [gpu_node])
    reason = expected_reason(1, scenario.standings(replicas[1], refused))
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
    refused = uniformly(scenario.what_else_blocks(big), h100)  # {}: without its claim it schedules
    reason = expected_reason(3, [(free, refused[n]) for n, free in zip(h100, (2, 2, 0), strict=True)])
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
