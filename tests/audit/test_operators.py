"""Operators' resources audited as the workloads the operators generate (fixtures/audit_corpus/PROVENANCE.md):
verdicts written by hand from the operators' sources at the cited releases, findings on the resource edited."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from tests.audit.test_command import audit

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus"
SUMS = {
    "kaito-workspace/kaito_workspace_llama-3.1_8b_instruct.yaml":
        "0309a1f060e88ecba9cc4d7b0fd579b8e0d6ff367a64d542633f823af7e9f49f",
    "kserve-vllm-runtime/kserve-vllmserver.yaml": "3fbf7e64c7832b8c78bd3f64aac13de742ac70587f8dd02425116c2cb187f01a",
}  # fmt: skip
KAITO_SETS = "not a field of the Workspace: KAITO v0.12.0 sets it"


def _records(*files: str) -> dict[str, tuple[str, str | None]]:
    rc, out, err = audit(*(a for f in files for a in ("-f", f)), "--output", "json")
    assert rc == 1, err
    return {r["check"]: (r["status"], r["field"]) for r in json.loads(out)}


def test_samples_are_as_published() -> None:
    for name, digest in SUMS.items():
        assert hashlib.sha256((CORPUS / name).read_bytes()).hexdigest() == digest, name


def test_kaito_workspace_is_its_statefulset_named_as_the_workspace() -> None:
    rc, out, _ = audit("-f", str(CORPUS / "kaito-workspace"), "--output", "json")
    records = json.loads(out)
    assert {(r["kind"], r["name"]) for r in records} == {("Workspace", "workspace-llama-3-1-8b-instruct")}
    found = {r["check"]: (r["status"], r["field"]) for r in records}
    assert found == {
        "autoscaler-utilization-signal": ("n/a", KAITO_SETS),
        "autoscaler-scale-to-zero": ("n/a", KAITO_SETS),
        "autoscaler-cooldown-short": ("n/a", KAITO_SETS),
        "keda-null-as-zero": ("n/a", KAITO_SETS),
        "fixed-replicas": ("fail", "resource.count"),
        "no-readiness-probe": ("pass", KAITO_SETS),  # /health after 30 s
        "no-startup-probe": ("pass", KAITO_SETS),  # 10 s × 180 = 1800 s
        "grace-period-short": ("fail", KAITO_SETS),  # KAITO sets none: the API's 30 s
        "no-prestop": ("fail", KAITO_SETS),
        "no-pdb": ("fail", None),
        "gpu-nodes-untainted": ("n/a", None),
        "no-gpu-toleration": ("pass", KAITO_SETS),  # nvidia.com/gpu and sku=gpu
        "non-gpu-pods-on-gpu-nodes": ("n/a", None),
        "time-slicing-user-facing": ("unknown", None),
        "round-robin-routing": ("n/a", "resource.count"),  # one replica
        "ingress-timeout-short": ("n/a", None),
        "ingress-buffering": ("n/a", None),
        "context-oversized": ("fail", "inference.config (the ConfigMap's vllm section, e.g. max-model-len)"),
    }
    assert rc == 1


ISVC = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llama", "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment"}},
    "spec": {
        "predictor": {
            "minReplicas": 0,
            "maxReplicas": 4,
            "model": {
                "modelFormat": {"name": "vLLM"},
                "args": ["--max-model-len=8192"],
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            },
        }
    },
}


def test_kserve_raw_isvc_with_its_cluster_serving_runtime(tmp_path: Path) -> None:
    isvc = tmp_path / "isvc.yaml"
    isvc.write_text(yaml.safe_dump(ISVC))
    found = _records(str(isvc), str(CORPUS / "kserve-vllm-runtime"))
    model = "spec.predictor.model"
    scaler = "spec.predictor.minReplicas, maxReplicas, scaleMetric (and serving.kserve.io/autoscalerClass)"
    assert found["autoscaler-utilization-signal"] == ("fail", scaler)  # KServe's HPA: cpu at 80 %
    assert found["autoscaler-scale-to-zero"] == ("pass", scaler)  # minReplicas 0 is raised to 1 on the HPA
    assert found["fixed-replicas"] == ("pass", "spec.predictor.minReplicas")
    assert found["no-readiness-probe"] == ("pass", f"{model}.readinessProbe")  # the runtime's /v1/models
    assert found["no-startup-probe"] == ("pass", f"{model}.startupProbe")  # 30 + 30 × 60 s
    assert found["grace-period-short"] == ("fail", "spec.predictor.terminationGracePeriodSeconds")
    assert found["no-prestop"] == ("fail", f"{model}.lifecycle.preStop")
    assert found["context-oversized"] == ("pass", f"{model}.args")  # runtime args + the predictor's
    assert found["round-robin-routing"][1] == "spec.predictor.minReplicas"


def test_kserve_without_its_runtime_or_in_modelmesh_mode_is_noted(tmp_path: Path) -> None:
    isvc = tmp_path / "isvc.yaml"
    isvc.write_text(yaml.safe_dump(ISVC))
    rc, _, err = audit("-f", str(isvc))
    assert rc == 2
    assert "InferenceService default/llama: a runtime for model format vLLM is not in the input" in err
    modelmesh = {
        **ISVC,
        "metadata": {"name": "llama", "annotations": {"serving.kserve.io/deploymentMode": "ModelMesh"}},
    }
    isvc.write_text(yaml.safe_dump(modelmesh))
    rc, _, err = audit("-f", str(isvc), "-f", str(CORPUS / "kserve-vllm-runtime"))
    assert rc == 2
    assert "deploymentMode ModelMesh: only Standard and Knative (Serverless) modes are read" in err
