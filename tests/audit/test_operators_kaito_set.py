"""KAITO InferenceSets (fixtures/audit_corpus/kaito-inferenceset): verdicts written by hand from KAITO v0.12.0's
sources, findings on the InferenceSet fields to edit."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from tests.audit.test_command import audit
from tests.audit.test_command import audit_files as _found

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus" / "kaito-inferenceset"
SUMS = {
    "kaito_inferenceset_llama-3.1_8b_instruct.yaml": "456d33bc7c6d2e17ad8aa271cbe69ba82cf81d172951653815d705b90788c156",
    "kaito_inferenceset_phi_4_mini.yaml": "c66f9cf297d80eec419880f969e819712738ff3fc25b93491ee31f40cbec835d",
}
SETS = "not a field of the InferenceSet: KAITO v0.12.0 sets it"
SCALER = "metadata.annotations scaledobject.kaito.sh/ (auto-provision, max-replicas, metricName, threshold)"
CONFIG = "spec.template.inference.config (the ConfigMap's vllm section, e.g. max-model-len)"
# Each Workspace's preset pod: KAITO's probes and tolerations, no drain settings, no context cap
COMMON = {
    "no-readiness-probe": ("pass", SETS),  # /health after 30 s
    "no-startup-probe": ("pass", SETS),  # 10 s × 180 = 1800 s
    "grace-period-short": ("fail", SETS),  # none set: the API's 30 s
    "no-prestop": ("fail", SETS),
    "no-pdb": ("fail", None),
    "gpu-nodes-untainted": ("n/a", None),
    "no-gpu-toleration": ("pass", SETS),  # nvidia.com/gpu and sku=gpu
    "non-gpu-pods-on-gpu-nodes": ("n/a", None),
    "time-slicing-user-facing": ("unknown", None),
    "ingress-timeout-short": ("n/a", None),
    "ingress-buffering": ("n/a", None),
    "context-oversized": ("fail", CONFIG),
}
UNSCALED = {c: ("n/a", SCALER) for c in ("autoscaler-utilization-signal", "autoscaler-scale-to-zero")} | {
    c: ("n/a", SCALER) for c in ("autoscaler-cooldown-short", "keda-null-as-zero")
}


def test_samples_are_as_published() -> None:
    for name, digest in SUMS.items():
        assert hashlib.sha256((CORPUS / name).read_bytes()).hexdigest() == digest, name


def test_published_samples_lack_the_scalers_required_maximum() -> None:
    """Both samples ask for a ScaledObject without `max-replicas`, which KAITO's docs call required: the
    replica count stays fixed, and the note says which annotation to add."""
    rc, found, err, _ = _found(CORPUS / "kaito_inferenceset_llama-3.1_8b_instruct.yaml")
    assert rc == 1, err
    assert (
        "audit: note: InferenceSet default/llama-3-1-8b: scaledobject.kaito.sh/max-replicas missing "
        "(the KEDA KAITO scaler requires it): no ScaledObject is read"
    ) in err
    assert found == {
        ("InferenceSet", "llama-3-1-8b"): {
            **COMMON,
            **UNSCALED,
            "fixed-replicas": ("fail", "spec.replicas"),
            "round-robin-routing": ("unknown", "spec.replicas"),  # two Workspaces, each its own Service
        }
    }
    rc, found, err, _ = _found(CORPUS / "kaito_inferenceset_phi_4_mini.yaml")
    assert rc == 1, err
    assert found == {
        ("InferenceSet", "phi-4-mini"): {
            **COMMON,
            **UNSCALED,
            "fixed-replicas": ("fail", "spec.replicas"),
            "round-robin-routing": ("n/a", "spec.replicas"),  # one Workspace
        }
    }


def test_the_scalers_scaled_object_is_read_from_the_annotations(tmp_path: Path) -> None:
    obj = yaml.safe_load((CORPUS / "kaito_inferenceset_phi_4_mini.yaml").read_text())
    obj["metadata"]["annotations"]["scaledobject.kaito.sh/max-replicas"] = "5"
    path = tmp_path / "is.yaml"
    path.write_text(yaml.safe_dump(obj))
    rc, found, err, records = _found(path)
    assert rc == 1, err
    assert "note" not in err
    assert found[("InferenceSet", "phi-4-mini")] == {
        **COMMON,
        "autoscaler-utilization-signal": ("pass", SCALER),  # vllm:num_requests_waiting, a queue
        "autoscaler-scale-to-zero": ("pass", SCALER),  # at least 1
        "autoscaler-cooldown-short": ("fail", SCALER),  # the scaler's HPA waits 300 s
        "keda-null-as-zero": ("n/a", SCALER),  # an external trigger, not prometheus
        "fixed-replicas": ("pass", "spec.replicas"),
        "round-robin-routing": ("unknown", "spec.replicas"),  # up to 5 Workspaces, each its own Service
    }
    cooldown = next(r for r in records if r["check"] == "autoscaler-cooldown-short")
    assert cooldown["detail"] == (
        "scales down after less than the cold start (600 s): "
        "keda phi-4-mini: scaleDown.stabilizationWindowSeconds 300 s"
    )


def test_an_inferenceset_without_inference_is_a_note(tmp_path: Path) -> None:
    obj = yaml.safe_load((CORPUS / "kaito_inferenceset_phi_4_mini.yaml").read_text())
    del obj["spec"]["template"]["inference"]
    path = tmp_path / "is.yaml"
    path.write_text(yaml.safe_dump(obj))
    rc, out, err = audit("-f", str(path))
    assert rc == 2
    assert "audit: note: InferenceSet default/phi-4-mini: no spec.template.inference: nothing to serve" in err
    assert "Traceback" not in out + err


def test_a_maximum_that_is_not_a_count_is_a_note(tmp_path: Path) -> None:
    obj = yaml.safe_load((CORPUS / "kaito_inferenceset_phi_4_mini.yaml").read_text())
    obj["metadata"]["annotations"]["scaledobject.kaito.sh/max-replicas"] = "lots"
    path = tmp_path / "is.yaml"
    path.write_text(yaml.safe_dump(obj))
    rc, found, err, _ = _found(path)
    assert rc == 1, err
    assert "scaledobject.kaito.sh/max-replicas 'lots' is not a count: no ScaledObject is read" in err
    assert found[("InferenceSet", "phi-4-mini")]["fixed-replicas"] == ("fail", "spec.replicas")
