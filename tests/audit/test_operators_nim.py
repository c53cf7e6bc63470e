"""NVIDIA NIM Operator NIMServices (fixtures/audit_corpus/nim-operator): verdicts written by hand from NIM
Operator v3.1.2's sources, findings on the NIMService fields to edit."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.audit.test_command import audit
from tests.audit.test_command import audit_files as _found

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus" / "nim-operator"
SUMS = {
    "basic-llm.yaml": "81d2d70b51aefd090a4d2c94fa06f273801bb78590f6383047b4b820c8d240f9",
    "autoscaling-llm.yaml": "df1e96aeaffc9c09785cb14f19ba7ee9091b81afda14b8acffd51740a2c29711",
    "full-llm.yaml": "f31466686dcf89268b6f0de15ce603344f59dab37117376ce15b3130d54aea97",
}
NAME = ("NIMService", "meta-llama-3-2-1b-instruct")
SETS = "not a field of the NIMService: NIM Operator v3.1.2 sets it"
SCALE = "spec.scale (enabled, hpa.minReplicas, maxReplicas, metrics, behavior)"
CONTEXT = "spec.env (NIM_MAX_MODEL_LEN)"
# What every sample shares: NIM's default probes, no drain settings, one GPU and no toleration, no model cap
COMMON = {
    "no-readiness-probe": ("pass", "spec.readinessProbe.probe"),  # /v1/health/ready after 15 s
    "no-startup-probe": ("pass", "spec.startupProbe.probe"),  # 30 + 10 × 120 = 1230 s
    "grace-period-short": ("fail", SETS),
    "no-prestop": ("fail", SETS),
    "no-pdb": ("fail", None),
    "gpu-nodes-untainted": ("n/a", None),
    "no-gpu-toleration": ("unknown", "spec.tolerations"),
    "non-gpu-pods-on-gpu-nodes": ("n/a", None),
    "time-slicing-user-facing": ("unknown", None),
    "context-oversized": ("unknown", CONTEXT),  # no NIM_MAX_MODEL_LEN: the model profile or the model sets it
}
HPA = {
    "autoscaler-utilization-signal": ("pass", SCALE),  # gpu_cache_usage_perc: KV cache, not utilisation
    "autoscaler-scale-to-zero": ("pass", SCALE),
    "autoscaler-cooldown-short": ("fail", SCALE),  # no behavior: the HPA's 300 s window
    "keda-null-as-zero": ("n/a", SCALE),
    "fixed-replicas": ("pass", "spec.scale.hpa.minReplicas"),
    "round-robin-routing": ("fail", "spec.scale.hpa.minReplicas"),  # up to 2 behind the Service
}


def test_samples_are_as_published() -> None:
    for name, digest in SUMS.items():
        assert hashlib.sha256((CORPUS / name).read_bytes()).hexdigest() == digest, name


def test_basic_sample_is_one_fixed_replica() -> None:
    rc, found, err, _ = _found(CORPUS / "basic-llm.yaml")
    assert rc == 1, err
    assert "NIMCache" not in err  # the model cache it mounts is read along, not skipped
    assert found == {
        NAME: {
            **COMMON,
            **{c: ("n/a", SCALE) for c in ("autoscaler-utilization-signal", "autoscaler-scale-to-zero")},
            **{c: ("n/a", SCALE) for c in ("autoscaler-cooldown-short", "keda-null-as-zero")},
            "fixed-replicas": ("fail", "spec.replicas"),
            "round-robin-routing": ("n/a", "spec.replicas"),
            "ingress-timeout-short": ("n/a", None),
            "ingress-buffering": ("n/a", None),
        }
    }


def test_autoscaling_sample_scales_on_the_kv_cache_with_the_hpa_default_window() -> None:
    rc, found, err, records = _found(CORPUS / "autoscaling-llm.yaml")
    assert rc == 1, err
    assert found == {
        NAME: {**COMMON, **HPA, "ingress-timeout-short": ("n/a", None), "ingress-buffering": ("n/a", None)}
    }
    cooldown = next(r for r in records if r["check"] == "autoscaler-cooldown-short")
    assert cooldown["detail"] == (
        "scales down after less than the cold start (600 s): hpa meta-llama-3-2-1b-instruct: "
        "scaleDown.stabilizationWindowSeconds (default) 300 s"
    )


def test_full_sample_adds_an_nginx_ingress_with_the_default_timeout() -> None:
    rc, found, err, records = _found(CORPUS / "full-llm.yaml")
    assert rc == 1, err
    assert found == {
        NAME: {**COMMON, **HPA, "ingress-timeout-short": ("fail", None), "ingress-buffering": ("pass", None)}
    }
    timeout = next(r for r in records if r["check"] == "ingress-timeout-short")
    assert "Ingress meta-llama-3-2-1b-instruct: 60 s (default)" in timeout["detail"]


def _service() -> dict[str, Any]:
    docs = list(yaml.safe_load_all((CORPUS / "full-llm.yaml").read_text()))
    return copy.deepcopy(next(d for d in docs if d and d["kind"] == "NIMService"))


def test_a_healthy_variant_fails_only_what_the_operator_sets(tmp_path: Path) -> None:
    """A user fixes what the NIMService has fields for; the grace period and preStop stay the operator's."""
    nim = _service()
    spec = nim["spec"]
    spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    spec["scale"]["hpa"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 900}}
    spec["expose"]["ingress"]["annotations"] = {"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600"}
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "nim", "namespace": "nim-service"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "meta-llama-3-2-1b-instruct"}}},
    }
    path = tmp_path / "nim.yaml"
    path.write_text(yaml.safe_dump_all([nim, pdb]))
    rc, found, err, _ = _found(path)
    assert rc == 1, err
    failing = {c: v for c, v in found[NAME].items() if v[0] == "fail"}
    # no field for them; a shared Service is what NIM Operator exposes (expose.router adds an Ingress/route)
    assert failing == {
        "grace-period-short": ("fail", SETS),
        "no-prestop": ("fail", SETS),
        "round-robin-routing": ("fail", "spec.scale.hpa.minReplicas"),
    }
    assert found[NAME]["no-gpu-toleration"] == ("pass", "spec.tolerations")


def test_disabled_and_own_probes_are_read(tmp_path: Path) -> None:
    nim = _service()
    nim["spec"]["readinessProbe"] = {"enabled": False}
    nim["spec"]["startupProbe"] = {
        "probe": {"httpGet": {"path": "/v1/health/ready", "port": "api"}, "periodSeconds": 10}
    }
    nim["spec"]["livenessProbe"] = {"enabled": False}
    path = tmp_path / "nim.yaml"
    path.write_text(yaml.safe_dump(nim))
    rc, found, _, records = _found(path)
    assert rc == 1
    assert found[NAME]["no-readiness-probe"] == ("fail", "spec.readinessProbe.probe")
    startup = next(r for r in records if r["check"] == "no-startup-probe")
    assert (startup["status"], startup["detail"]) == (
        "fail",
        "startupProbe allows 30 s (initialDelaySeconds + periodSeconds × failureThreshold), "
        "less than the start-up (600 s)",
    )


@pytest.mark.parametrize(
    ("change", "note"),
    [
        ({"multiNode": {"parallelism": {"pipeline": 2}}}, "spec.multiNode (a LeaderWorkerSet"),
        ({"inferencePlatform": "kserve"}, "spec.inferencePlatform kserve: only the standalone platform"),
        ({"image": "nvcr.io/nim/meta/llama"}, "no spec.image.repository: the NIM's image is unknown"),
    ],
)
def test_what_is_not_read_is_a_note(tmp_path: Path, change: dict[str, Any], note: str) -> None:
    nim = _service()
    nim["spec"].update(change)
    path = tmp_path / "nim.yaml"
    path.write_text(yaml.safe_dump(nim))
    rc, out, err = audit("-f", str(path))
    assert rc == 2
    assert f"audit: note: NIMService nim-service/meta-llama-3-2-1b-instruct: {note}" in err
    assert "Traceback" not in out + err


def test_odd_fields_are_read_as_unset_with_a_note(tmp_path: Path) -> None:
    nim = _service()
    nim["spec"]["readinessProbe"] = "yes"
    nim["spec"]["scale"] = ["on"]
    nim["spec"]["expose"]["router"] = {"ingress": {"ingressClass": "nginx"}}
    path = tmp_path / "nim.yaml"
    path.write_text(yaml.safe_dump(nim))
    rc, found, err, _ = _found(path)
    assert rc == 1
    assert "spec.readinessProbe is not a mapping: read as unset; spec.scale is not a mapping: read as unset" in err
    assert "spec.expose.router is not read: add the Ingress or HTTPRoute it makes to the input" in err
    assert found[NAME]["no-readiness-probe"][0] == "pass"  # unset: the operator's default
    assert found[NAME]["fixed-replicas"] == ("fail", "spec.replicas")


def test_nim_max_model_len_in_spec_env_is_judged(tmp_path: Path) -> None:
    """The context limit a NIMService sets in `spec.env` is judged as an engine's --max-model-len."""
    nim = _service()
    nim["spec"]["env"] = [*nim["spec"].get("env", []), {"name": "NIM_MAX_MODEL_LEN", "value": "131072"}]
    path = tmp_path / "nim.yaml"
    path.write_text(yaml.safe_dump(nim))
    rc, found, _, records = _found(path)
    assert rc == 1
    assert found[NAME]["context-oversized"] == ("pass", CONTEXT)
    (context,) = [r for r in records if r["check"] == "context-oversized"]
    assert context["detail"] == "NIM container meta-llama-3-2-1b-instruct-ctr: NIM_MAX_MODEL_LEN 131072"
