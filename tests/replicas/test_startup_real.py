"""Replica start-up against a real control plane: a Deployment's pods are created by the controller manager,
bound by the scheduler to a kwok GPU node and made Running and Ready by kwok; the collector, watching from
before, observes each phase once per pod under the Deployment's name."""

from __future__ import annotations

from typing import Any

from exporter.exposition import render
from tests.kube.objects import engine_deployment
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for
from tests.replicas.real import replicas_collector

NODE = "startup-gpu"


def deployment(ns: str, replicas: int) -> dict[str, Any]:
    return engine_deployment(
        ns,
        replicas=replicas,
        pod_spec={
            "nodeSelector": {"pool": "startup"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "vllm", "image": "vllm", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    )


def sample(text: str, name: str, ns: str, extra: str = "") -> float | None:
    prefix = f'{name}{{namespace="{ns}",workload="vllm"{extra}}} '
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix) :])
    return None


def test_startup_phases_of_a_deployment_from_a_real_control_plane(kube_cluster: ControlPlane) -> None:
    cluster = kube_cluster
    cluster.add_node(NODE, capacity={"nvidia.com/gpu": "2"}, labels={"pool": "startup"})
    ns = cluster.namespace("startup")
    with replicas_collector(cluster, ns, NODE) as collector:
        assert sample(render(collector.collect()), "llm_replica_starting", ns) is None  # no pod of it yet
        cluster.apply(deployment(ns, 3))  # two fit on the 2-GPU node; the third stays Pending

        def counted() -> bool:
            text = render(collector.collect())
            return (
                sample(text, "llm_replica_startup_seconds_count", ns, ',phase="starting"') == 2
                and sample(text, "llm_replica_starting", ns) == 1
            )

        wait_for(counted, 120, "two replicas Ready and one Pending")
        text = render(collector.collect())
        assert sample(text, "llm_replica_startup_seconds_count", ns, ',phase="scheduling"') == 2
        assert sample(text, "llm_replica_ready", ns) == 2
        # the API server's timestamps have whole seconds; kwok readies a bound pod within moments
        starting_sum = sample(text, "llm_replica_startup_seconds_sum", ns, ',phase="starting"')
        assert starting_sum is not None and 0 <= starting_sum <= 60
        oldest = sample(text, "llm_replica_starting_oldest_seconds", ns)
        assert oldest is not None and oldest >= 0
        # scraped again: the same start-ups are not counted twice
        assert sample(render(collector.collect()), "llm_replica_startup_seconds_count", ns, ',phase="starting"') == 2
