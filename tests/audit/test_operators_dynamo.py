"""NVIDIA Dynamo DynamoGraphDeployments (fixtures/audit_corpus/dynamo-vllm): verdicts written by hand from the
Dynamo operator's sources (commits cited in exporter/k8s/operators/dynamo.py), one workload per service, the
findings on that service's fields."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.audit.test_command import audit
from tests.audit.test_command import audit_files as _found

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus" / "dynamo-vllm"
SUMS = {
    "agg.yaml": "943481be4403ee43ae31f62643914bbef180bae376545b2dcb050a1fff0a1af6",
    "disagg.yaml": "483f4e661fbf54d1f6479d43c9ed399ee1451e9a358186ca8a3c56125fa9e3e4",
    "../dynamo-sglang/agg.yaml": "32e638c6d26f7b12d539698cf93e11ceaac0e3182ee14ff9030506b97cdf9e78",
    "../dynamo-trtllm/agg.yaml": "62c3042d0b3129b630bae7be4f6bd51ac865c5d3826d0beed8615def628471bc",
}


def expected(service: str) -> dict[str, tuple[str, str | None]]:
    """A single-GPU vLLM worker with one replica as the samples publish it: Dynamo's worker probes (startup
    7200 s), its 60 s grace period, no preStop, no toleration, no context cap, no autoscaling."""
    at = f"spec.services.{service}"
    main = f"{at}.extraPodSpec.mainContainer"
    return {
        **{
            c: ("n/a", f"{at}.autoscaling")
            for c in (
                "autoscaler-utilization-signal",
                "autoscaler-scale-to-zero",
                "autoscaler-cooldown-short",
                "keda-null-as-zero",
            )
        },
        "fixed-replicas": ("fail", f"{at}.replicas"),
        "no-readiness-probe": ("pass", f"{at}.readinessProbe"),  # /health every 10 s
        "no-startup-probe": ("pass", f"{main}.startupProbe"),  # 10 s × 720
        "grace-period-short": ("pass", f"{at}.extraPodSpec.terminationGracePeriodSeconds"),  # 60 s > 30 s
        "no-prestop": ("fail", f"{main}.lifecycle.preStop"),
        "no-pdb": ("fail", None),
        "gpu-nodes-untainted": ("n/a", None),
        "no-gpu-toleration": ("unknown", f"{at}.extraPodSpec.tolerations"),
        "non-gpu-pods-on-gpu-nodes": ("n/a", None),
        "time-slicing-user-facing": ("unknown", None),
        "round-robin-routing": ("n/a", f"{at}.replicas"),  # one replica
        "ingress-timeout-short": ("n/a", None),
        "ingress-buffering": ("n/a", None),
        "context-oversized": ("fail", f"{main}.args"),  # --model only
    }


def test_samples_are_as_published() -> None:
    for name, digest in SUMS.items():
        assert hashlib.sha256((CORPUS / name).read_bytes()).hexdigest() == digest, name


def test_aggregated_graph_is_its_worker_not_its_frontend() -> None:
    rc, found, err, _ = _found(CORPUS / "agg.yaml")
    assert rc == 1, err
    assert found == {("DynamoGraphDeployment", "vllm-agg/worker"): expected("worker")}


def test_disaggregated_graph_is_its_prefill_and_decode_workers() -> None:
    rc, found, err, _ = _found(CORPUS / "disagg.yaml")
    assert rc == 1, err
    assert found == {
        ("DynamoGraphDeployment", f"vllm-disagg/{s}"): expected(s) for s in ("VllmDecodeWorker", "VllmPrefillWorker")
    }


@pytest.mark.parametrize(
    ("sample", "service", "context"),
    [
        ("dynamo-sglang", "decode", "fail"),  # no --context-length
        ("dynamo-trtllm", "TRTLLMWorker", "unknown"),  # TensorRT-LLM under Dynamo: its limit is in the engine file
    ],
)
def test_the_sglang_and_trtllm_graphs_are_their_workers(sample: str, service: str, context: str) -> None:
    rc, found, err, _ = _found(CORPUS.parent / sample / "agg.yaml")
    assert rc == 1, err
    graph = sample.removeprefix("dynamo-") + "-agg"
    main = f"spec.services.{service}.extraPodSpec.mainContainer"
    assert found == {
        ("DynamoGraphDeployment", f"{graph}/{service}"): {
            **expected(service),
            "context-oversized": (context, f"{main}.args"),
        }
    }


def _graph() -> dict[str, Any]:
    graph: dict[str, Any] = yaml.safe_load((CORPUS / "agg.yaml").read_text())
    return graph


def test_a_services_own_probe_and_pod_fields_replace_dynamos(tmp_path: Path) -> None:
    graph = _graph()
    worker = graph["spec"]["services"]["worker"]
    worker["readinessProbe"] = {"exec": {"command": ["true"]}, "periodSeconds": 10}
    worker["extraPodSpec"]["terminationGracePeriodSeconds"] = 10
    worker["extraPodSpec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    worker["extraPodSpec"]["mainContainer"]["startupProbe"] = {"httpGet": {"path": "/live", "port": 9090}}
    worker["extraPodSpec"]["mainContainer"]["args"] += ["--max-model-len", "4096"]
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(graph))
    rc, found, err, records = _found(path)
    assert rc == 1, err
    got = found[("DynamoGraphDeployment", "vllm-agg/worker")]
    main = "spec.services.worker.extraPodSpec.mainContainer"
    assert got["grace-period-short"] == ("fail", "spec.services.worker.extraPodSpec.terminationGracePeriodSeconds")
    assert got["no-gpu-toleration"] == ("pass", "spec.services.worker.extraPodSpec.tolerations")
    assert got["no-startup-probe"] == ("fail", f"{main}.startupProbe")  # 0 + 10 × 3 = 30 s
    assert got["context-oversized"][0] != "fail"
    startup = next(r for r in records if r["check"] == "no-startup-probe")
    assert "startupProbe allows 30 s" in startup["detail"]


def test_what_is_not_read_is_a_note(tmp_path: Path) -> None:
    graph = _graph()
    services = graph["spec"]["services"]
    services["Planner"] = {"componentType": "planner", "replicas": 1}
    services["big"] = {**services["worker"], "multinode": {"nodeCount": 2}}
    services["odd"] = "yes"
    services["worker"]["autoscaling"] = {"enabled": True, "minReplicas": 1, "maxReplicas": 4}
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(graph))
    rc, found, err, _ = _found(path)
    assert rc == 1, err
    assert (
        "audit: note: DynamoGraphDeployment default/vllm-agg: a planner service sets the workers' replicas at "
        "run time: spec.services.*.replicas is the start; spec.services.big.multinode is not read (a "
        "LeaderWorkerSet or Grove gang per replica); spec.services.odd is not a mapping: not read; "
        "spec.services.worker.autoscaling is not read"
    ) in err
    assert set(found) == {("DynamoGraphDeployment", "vllm-agg/worker")}


def test_a_graph_without_services_is_a_note(tmp_path: Path) -> None:
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({**_graph(), "spec": {}}))
    rc, out, err = audit("-f", str(path))
    assert rc == 2
    assert "audit: note: DynamoGraphDeployment default/vllm-agg: no spec.services: nothing to run" in err
    assert "Traceback" not in out + err


def test_services_that_are_not_a_mapping_are_a_note(tmp_path: Path) -> None:
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({**_graph(), "spec": {"services": ["Frontend", "worker"]}}))
    rc, out, err = audit("-f", str(path))
    assert rc == 2
    assert "audit: note: DynamoGraphDeployment default/vllm-agg: spec.services is not a mapping: nothing read" in err
    assert "Traceback" not in out + err
