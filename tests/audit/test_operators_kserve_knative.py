"""KServe InferenceServices in Knative (serverless) mode: verdicts written by hand from KServe v0.20.0's and
Knative Serving v0.48.1's sources (cited in exporter/k8s/operators/kserve_knative.py), with the published
vLLM ClusterServingRuntime (fixtures/audit_corpus/kserve-vllm-runtime)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.audit.test_command import audit

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus"
RUNTIME = CORPUS / "kserve-vllm-runtime"
MODE = "serving.kserve.io/deploymentMode"
ISVC: dict[str, Any] = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llama", "annotations": {MODE: "Serverless"}},
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
SCALER = "spec.predictor.minReplicas, maxReplicas, scaleTarget, scaleMetric (and autoscaling.knative.dev/ annotations)"
MODEL = "spec.predictor.model"
KNATIVE_SETS = "not a field of the InferenceService: KServe v0.20.0 on Knative Serving v0.48.1 sets it"


def _audit(tmp_path: Path, isvc: dict[str, Any]) -> tuple[int, dict[str, tuple[str, str | None, str]], str]:
    path = tmp_path / "isvc.yaml"
    path.write_text(yaml.safe_dump(isvc))
    rc, out, err = audit("-f", str(path), "-f", str(RUNTIME), "--output", "json")
    records = json.loads(out or "[]")
    assert {(r["kind"], r["name"]) for r in records} == {("InferenceService", "llama")}, err
    return rc, {r["check"]: (r["status"], r["field"], r["detail"]) for r in records}, err


@pytest.mark.parametrize("mode", ["Serverless", "Knative", None])
def test_knative_mode_is_the_revision_knative_runs(tmp_path: Path, mode: str | None) -> None:
    isvc = copy.deepcopy(ISVC)
    if mode is None:
        del isvc["metadata"]["annotations"][MODE]
    rc, found, err = _audit(tmp_path, isvc)
    assert rc == 1, err
    assert ("no serving.kserve.io/deploymentMode: read as Knative, the default" in err) == (mode is None)
    assert {c: v[:2] for c, v in found.items()} == {
        "autoscaler-utilization-signal": ("pass", SCALER),  # the KPA on concurrency
        "autoscaler-scale-to-zero": ("fail", SCALER),  # minReplicas 0 is min-scale 0
        "autoscaler-cooldown-short": ("fail", SCALER),  # 60 s stable window, no scale-down delay
        "keda-null-as-zero": ("n/a", SCALER),
        "fixed-replicas": ("pass", "spec.predictor.minReplicas"),
        "no-readiness-probe": ("pass", f"{MODEL}.readinessProbe"),  # the runtime's, run by the queue-proxy
        "no-startup-probe": ("pass", f"{MODEL}.startupProbe"),  # the runtime's 30 + 30 × 60 s
        "grace-period-short": ("pass", "spec.predictor.timeout"),  # the Revision's timeout: 300 s
        "no-prestop": ("pass", KNATIVE_SETS),  # the queue-proxy drain hook
        "no-pdb": ("fail", None),
        "gpu-nodes-untainted": ("n/a", None),
        "no-gpu-toleration": ("unknown", "spec.predictor.tolerations"),
        "non-gpu-pods-on-gpu-nodes": ("n/a", None),
        "time-slicing-user-facing": ("unknown", None),
        "round-robin-routing": ("unknown", "spec.predictor.minReplicas"),
        "ingress-timeout-short": ("n/a", None),
        "ingress-buffering": ("n/a", None),
        "context-oversized": ("pass", f"{MODEL}.args"),
    }
    assert found["autoscaler-cooldown-short"][2] == (
        "scales down after less than the cold start (600 s): "
        "knative llama-predictor: autoscaling.knative.dev/window + scale-down-delay 60 s"
    )


def test_knatives_settings_are_read_from_the_predictor_and_annotations(tmp_path: Path) -> None:
    isvc = copy.deepcopy(ISVC)
    isvc["metadata"]["annotations"].update(
        {"autoscaling.knative.dev/window": "5m", "autoscaling.knative.dev/scale-down-delay": "10m"}
    )
    predictor = isvc["spec"]["predictor"]
    predictor.update({"minReplicas": 1, "timeout": 20, "scaleMetric": "rps", "terminationGracePeriodSeconds": 900})
    predictor["model"]["lifecycle"] = {"postStart": {"exec": {"command": ["true"]}}}
    rc, found, err = _audit(tmp_path, isvc)
    assert rc == 1, err
    assert found["autoscaler-scale-to-zero"][0] == "pass"
    assert found["autoscaler-utilization-signal"][2] == "scales on knative:rps"
    assert found["autoscaler-cooldown-short"][:2] == ("pass", SCALER)  # 300 + 600 s
    # Knative sets the grace period to the Revision's timeout, whatever the pod spec says
    assert found["grace-period-short"] == (
        "fail",
        "spec.predictor.timeout",
        "terminationGracePeriodSeconds 20 s, not above the longest request (30 s)",
    )
    assert found["no-prestop"][0] == "pass"  # Knative's drain hook replaces the container's lifecycle


def test_another_knative_autoscaler_class_is_not_the_kpa(tmp_path: Path) -> None:
    isvc = copy.deepcopy(ISVC)
    isvc["metadata"]["annotations"]["autoscaling.knative.dev/class"] = "hpa.autoscaling.knative.dev"
    rc, found, err = _audit(tmp_path, isvc)
    assert rc == 1, err
    assert found["fixed-replicas"][:2] == ("fail", "spec.predictor.minReplicas")
    assert found["autoscaler-scale-to-zero"][0] == "n/a"


def test_kserves_published_fluid_sample_scales_a_gpu_server_to_zero() -> None:
    """KServe v0.20.0's docs/samples/fluid: an 8B model on the huggingface server, no deploymentMode (Knative by
    the shipped default), `minReplicas: 0`. The runtime's container has no port and no probe: Knative gives it
    `user-port` 8080 and a TCP readiness probe, so it is a GPU server of an engine not named (the huggingface
    server picks its backend itself), audited by the checks that read no engine flags."""
    rc, out, err = audit("-f", str(CORPUS / "kserve-fluid-llama"), "--output", "json")
    assert rc == 1, err
    assert "InferenceService default/llama-31-8b-instruct: no serving.kserve.io/deploymentMode: read as Knative" in err
    found = {r["check"]: (r["status"], r["field"]) for r in json.loads(out)}
    assert found == {
        "autoscaler-utilization-signal": ("pass", SCALER),  # the KPA on concurrency
        "autoscaler-scale-to-zero": ("fail", SCALER),  # minReplicas 0
        "autoscaler-cooldown-short": ("fail", SCALER),  # the 60 s stable window
        "keda-null-as-zero": ("n/a", SCALER),
        "fixed-replicas": ("pass", "spec.predictor.minReplicas"),
        "no-readiness-probe": ("pass", f"{MODEL}.readinessProbe"),  # Knative's TCP probe
        "no-startup-probe": ("pass", f"{MODEL}.startupProbe"),  # no liveness probe to kill a loading replica
        "grace-period-short": ("pass", "spec.predictor.timeout"),  # 300 s
        "no-prestop": ("pass", KNATIVE_SETS),
        "no-pdb": ("fail", None),
        "gpu-nodes-untainted": ("n/a", None),
        "no-gpu-toleration": ("unknown", "spec.predictor.tolerations"),
        "non-gpu-pods-on-gpu-nodes": ("n/a", None),
        "time-slicing-user-facing": ("unknown", None),
        "round-robin-routing": ("unknown", "spec.predictor.minReplicas"),
        "ingress-timeout-short": ("n/a", None),
        "ingress-buffering": ("n/a", None),
        "context-oversized": ("unknown", f"{MODEL}.args"),  # the engine is not named
    }
