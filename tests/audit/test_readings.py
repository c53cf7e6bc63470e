"""The audit reads frontends, node affinity and accelerators as the cluster role does (`exporter.k8s`): the
Gateway API's "0s", F5 NGINX's and ingress-nginx's own formats, GKE's backend service timeout, ORed node
selector terms and NotIn, and accelerators other than NVIDIA's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.audit import objects as o
from tests.audit.test_checks import _pod, _replace, healthy, verdicts
from tests.audit.test_command import audit

ENGINE_POOL = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "vllm"}


def httproute(timeouts: dict[str, str]) -> o.Obj:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "llm", "namespace": "inference"},
        "spec": {"rules": [{"backendRefs": [ENGINE_POOL], "timeouts": timeouts}]},
    }


def timeout_check(objs: list[o.Obj], tmp_path: Path) -> dict[str, Any]:
    """`llm-exporter audit -f` on these manifests: the ingress-timeout-short record."""
    path = tmp_path / "objs.yaml"
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    _, out, err = audit("-f", str(path), "--output", "json")
    assert err == ""
    (record,) = [r for r in json.loads(out) if r["check"] == "ingress-timeout-short"]
    return {k: record[k] for k in ("status", "detail")}


def test_httproute_0s_is_no_timeout(tmp_path: Path) -> None:
    assert timeout_check(_replace(healthy(), "Ingress", httproute({"request": "0s"})), tmp_path) == {
        "status": "pass",
        "detail": "every read timeout above 60 s",
    }
    # a try at the backend is still cut by backendRequest
    cut = _replace(healthy(), "Ingress", httproute({"request": "0s", "backendRequest": "30s"}))
    assert timeout_check(cut, tmp_path) == {
        "status": "fail",
        "detail": "read timeout not above the longest generation (60 s): HTTPRoute llm: 30 s",
    }


def test_f5_nginx_reads_nginx_times(tmp_path: Path) -> None:
    f5 = o.ingress(annotations={"nginx.org/proxy-read-timeout": "1h 30m", "nginx.org/proxy-buffering": "false"})
    assert timeout_check(_replace(healthy(), "Ingress", f5), tmp_path)["status"] == "pass"


def test_ingress_nginx_reads_whole_seconds_only(tmp_path: Path) -> None:
    """strconv.Atoi: "600s" is logged as invalid and the 60 s default kept."""
    community = o.ingress(annotations={"nginx.ingress.kubernetes.io/proxy-read-timeout": "600s"})
    assert timeout_check(_replace(healthy(), "Ingress", community), tmp_path) == {
        "status": "fail",
        "detail": "read timeout not above the longest generation (60 s): Ingress llm: 60 s (default)",
    }


def gce_objects(service_annotations: dict[str, str], *extra: o.Obj) -> list[o.Obj]:
    ingress = o.ingress()
    del ingress["spec"]["ingressClassName"]
    ingress["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "gce"}
    service = o.service()
    service["metadata"]["annotations"] = service_annotations
    return [*_replace(_replace(healthy(), "Ingress", ingress), "Service", service), *extra]


def backendconfig(name: str, timeout: int) -> o.Obj:
    return {
        "apiVersion": "cloud.google.com/v1",
        "kind": "BackendConfig",
        "metadata": {"name": name, "namespace": "inference"},
        "spec": {"timeoutSec": timeout},
    }


def test_gke_ingress_backend_service_timeout(tmp_path: Path) -> None:
    assert timeout_check(gce_objects({}), tmp_path) == {
        "status": "fail",
        "detail": "read timeout not above the longest generation (60 s): Ingress llm: 30 s (default)",
    }
    ref = {"cloud.google.com/backend-config": '{"ports": {"8000": "long"}}'}
    assert timeout_check(gce_objects(ref, backendconfig("long", 3600)), tmp_path)["status"] == "pass"
    assert timeout_check(gce_objects(ref), tmp_path) == {  # the BackendConfig is not among the manifests
        "status": "unknown",
        "detail": "timeout not readable from the object (controller default): Ingress llm",
    }


def affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


def test_node_affinity_terms_are_ored() -> None:
    a100 = o.node("gpu-a100", labels={"pool": "a100"})  # untainted
    h100 = o.node("gpu-h100", taints=[o.GPU_TAINT], labels={"pool": "h100"})
    either = _pod(
        affinity=affinity(
            [{"key": "pool", "operator": "In", "values": ["a100"]}],
            [{"key": "pool", "operator": "In", "values": ["h100"]}],
        )
    )
    assert verdicts(either, nodes=[a100, h100], pods=[])["gpu-nodes-untainted"] == "fail"  # a100 is one of them


def test_gpu_nodes_are_those_its_pods_tolerate() -> None:
    h100 = o.node("gpu-h100", taints=[o.GPU_TAINT], labels={"pool": "h100"})
    dedicated = o.node("gpu-other", taints=[{"key": "team", "value": "research", "effect": "NoSchedule"}])
    assert verdicts(healthy(), nodes=[h100, dedicated], pods=[])["gpu-nodes-untainted"] == "pass"
    # GKE taints GPU nodes nvidia.com/gpu and adds the toleration at admission (ExtendedResourceToleration)
    untolerated = _pod(tolerations=[])
    assert verdicts(untolerated, nodes=[h100], pods=[])["gpu-nodes-untainted"] == "pass"
    assert verdicts(untolerated, nodes=[dedicated], pods=[])["gpu-nodes-untainted"] == "n/a"


def test_node_affinity_not_in_excludes_nodes() -> None:
    h100 = o.node("gpu-h100", taints=[o.GPU_TAINT], labels={"pool": "h100"})
    training = o.node("gpu-train", labels={"pool": "training"})  # untainted, and excluded
    not_training = _pod(affinity=affinity([{"key": "pool", "operator": "NotIn", "values": ["training"]}]))
    assert verdicts(not_training, nodes=[training, h100], pods=[])["gpu-nodes-untainted"] == "pass"


def test_neuron_and_intel_taint_keys() -> None:
    neuron = _pod(tolerations=[{"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}])
    neuron[-1] = o.changed(neuron[-1], resources={"limits": {"aws.amazon.com/neuroncore": "2"}})
    assert verdicts(neuron)["no-gpu-toleration"] == "pass"
    intel = _pod(tolerations=[{"key": "gpu.intel.com/i915", "operator": "Exists"}])
    intel[-1] = o.changed(intel[-1], resources={"limits": {"gpu.intel.com/i915": "1"}})
    assert verdicts(intel)["no-gpu-toleration"] == "pass"


def test_a_toleration_for_another_vendors_taint_does_not_count() -> None:
    # an AMD GPU's nodes are not tainted nvidia.com/gpu: that toleration says nothing about them
    amd = o.changed(o.engine(), resources={"limits": {"amd.com/gpu": "1"}})
    assert verdicts(_replace(healthy(), "Deployment", amd))["no-gpu-toleration"] == "unknown"


def test_tpu_nodes_are_accelerator_nodes() -> None:
    tpu_node = {**o.node("tpu-1", gpus=0), "status": {"capacity": {"google.com/tpu": "4"}}}
    tpu = o.changed(o.engine(), resources={"limits": {"google.com/tpu": "4"}})
    assert verdicts(_replace(healthy(), "Deployment", tpu), nodes=[tpu_node], pods=[])["gpu-nodes-untainted"] == "fail"
