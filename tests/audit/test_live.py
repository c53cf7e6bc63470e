"""What the cluster role keeps of the objects it watches for the audit (the reflectors' transforms)."""

from __future__ import annotations

import copy

from exporter.audit import live
from exporter.audit.collector import measured_lookup
from exporter.audit.recognise import DEFAULT
from exporter.k8s import environment
from exporter.k8s.workloads import Workload, workload
from exporter.replicas.startup import BUCKETS, Histogram
from tests.audit import objects as o
from tests.audit.generated import inference_service, predictor


def listed(obj: o.Obj) -> o.Obj:
    """As the API server lists it: no kind or apiVersion on the items, and a status."""
    out = copy.deepcopy(obj)
    del out["kind"], out["apiVersion"]
    out["status"] = {"replicas": 2, "readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
    out["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Apply"}]
    return out


def test_workloads_kept_are_engines_and_routers_only() -> None:
    keep = live.stamp("deployments", DEFAULT)
    engine = keep(listed(o.engine()))
    assert engine is not None and (engine["kind"], engine["apiVersion"]) == ("Deployment", "apps/v1")
    assert "status" not in engine and "managedFields" not in engine["metadata"]
    assert workload(engine) == workload(o.engine())
    router = listed(o.engine("router", image="lmcache/lmstack-router:latest", args=("--routing-logic", "session")))
    assert keep(router) is not None  # round-robin-routing reads the routers' logic
    assert keep(listed(o.engine("web", image="nginx:1.27", args=(), gpus=0))) is None
    assert live.stamp("deployments")(listed(o.engine("web", image="nginx:1.27", args=(), gpus=0))) is not None


def test_a_node_keeps_its_capacity_only() -> None:
    node = o.node("gpu-1", taints=[o.GPU_TAINT])
    del node["kind"], node["apiVersion"]
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-12-03T10:00:00Z"}]
    node["status"]["images"] = [{"names": ["vllm/vllm-openai:v0.10.0"], "sizeBytes": 9_000_000_000}]
    kept = live.stamp("nodes")(node)
    assert kept is not None
    assert kept["status"] == {"capacity": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}}
    assert kept["spec"]["taints"] == [o.GPU_TAINT]


def test_measured_cold_start_from_the_start_up_histograms() -> None:
    def histogram(*values: float) -> Histogram:
        h = Histogram([0] * len(BUCKETS))
        for v in values:
            h.observe(v)
        return h

    lookup = measured_lookup(
        {
            ("inference", "vllm", "scheduling"): histogram(*[4.0] * 10),  # all in (2.5, 5]
            ("inference", "vllm", "starting"): histogram(*[250.0] * 10),  # all in (180, 300]
            ("inference", "idle", "starting"): histogram(),  # no start-up seen: nothing measured
        }
    )
    got = lookup(o_workload("vllm"))
    # as histogram_quantile interpolates: 2.5 + 2.5 × 0.9 and 180 + 120 × 0.9
    assert got.starting_seconds == 288.0 and got.cold_start_seconds == 4.75 + 288.0
    assert lookup(o_workload("idle")).cold_start_seconds is None


def o_workload(name: str) -> Workload:
    w = workload(o.engine(name))
    assert w is not None
    return w


def test_a_configmap_keeps_its_short_data_only() -> None:
    """Not its annotations (kubectl's last-applied copy holds the data again), binaryData or a long value."""
    data = {"MAX_LEN": "8192", "dashboard.json": "{" + " " * environment.VALUE_LIMIT + "}"}
    cm = {"metadata": {"name": "vllm", "namespace": "inference", "uid": "1", "resourceVersion": "7",
                       "annotations": {"kubectl.kubernetes.io/last-applied-configuration": repr(data)},
                       "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
          "data": data, "binaryData": {"weights.bin": "AAECAw=="}}  # fmt: skip
    assert live.stamp("configmaps", DEFAULT)(cm) == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vllm", "namespace": "inference"},
        "data": {"MAX_LEN": "8192"}, "withheld": ["dashboard.json"],
    }  # fmt: skip


def test_an_operator_resource_keeps_what_its_reader_reads_stamped_with_the_version_listed() -> None:
    isvc = inference_service("llama", "llm")
    isvc["metadata"].update(uid="u-1", resourceVersion="7", labels={"team": "a"})
    kept = live.stamp("kserve_inferenceservices", DEFAULT)(listed(isvc))
    assert kept == {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "llama", "namespace": "llm", "labels": {"team": "a"},
                     "annotations": {"serving.kserve.io/deploymentMode": "Standard"}},
        "spec": isvc["spec"],
    }  # fmt: skip
    deployment = live.stamp("deployments", DEFAULT)(listed(predictor(isvc)))
    generated = None if deployment is None else workload(deployment)
    assert generated is not None and (generated.owner_kind, generated.owner) == ("InferenceService", "llama")
    ome = live.stamp("ome_inferenceservices")(listed({**isvc, "apiVersion": "ome.io/v1beta1"}))
    assert ome is not None and ome["apiVersion"] == "ome.io/v1beta1"
