"""OME InferenceServices (fixtures/audit_corpus/ome-llama): verdicts written by hand from OME v0.1.5's sources
and the sample's ClusterServingRuntime, findings on the InferenceService fields to edit."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tests.audit.test_command import audit
from tests.audit.test_command import audit_files as _found

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus" / "ome-llama"
ISVC = "llama-3-1-8b-instruct.yaml"
ENGINE = ("InferenceService", "llama-3-1-8b-instruct/engine")
SCALE = "spec.engine.minReplicas, maxReplicas, scaleMetric, scaleTarget (and ome.io/autoscalerClass)"
# The runtime's engine: SGLang with /health_generate readiness every 60 s, a 60 + 6 × 150 s start-up probe,
# the nvidia.com/gpu toleration, no drain settings, no --context-length; OME adds a PDB (maxUnavailable 1)
COMMON = {
    "no-readiness-probe": ("pass", "spec.engine.runner.readinessProbe"),
    "no-startup-probe": ("pass", "spec.engine.runner.startupProbe"),
    "grace-period-short": ("fail", "spec.engine.terminationGracePeriodSeconds"),
    "no-prestop": ("fail", "spec.engine.runner.lifecycle.preStop"),
    "no-pdb": ("pass", None),
    "gpu-nodes-untainted": ("n/a", None),
    "no-gpu-toleration": ("pass", "spec.engine.tolerations"),
    "non-gpu-pods-on-gpu-nodes": ("n/a", None),
    "time-slicing-user-facing": ("unknown", None),
    "context-oversized": ("fail", "spec.engine.runner.args"),
    "ingress-timeout-short": ("n/a", None),
    "ingress-buffering": ("n/a", None),
}


def _isvc() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load((CORPUS / ISVC).read_text()))


def _with(tmp_path: Path, isvc: dict[str, Any]) -> tuple[Path, ...]:
    path = tmp_path / "isvc.yaml"
    path.write_text(yaml.safe_dump(isvc))
    return path, CORPUS / "llama-3-1-8b-instruct-rt.yaml", CORPUS / "Llama-3.1-8B-Instruct.yaml"


def test_sample_is_one_engine_pinned_at_one_replica_behind_its_router() -> None:
    rc, found, err, _ = _found(CORPUS)
    assert rc == 1, err
    assert "BaseModel" not in err and "ServingRuntime" not in err  # read along, not skipped
    # the router (sglang_router) is no engine: only the engine is audited; its HPA (min = max = 1) cannot scale
    assert found == {
        ENGINE: {
            **COMMON,
            **{c: ("n/a", SCALE) for c in ("autoscaler-utilization-signal", "autoscaler-scale-to-zero")},
            **{c: ("n/a", SCALE) for c in ("autoscaler-cooldown-short", "keda-null-as-zero")},
            "fixed-replicas": ("fail", "spec.engine.minReplicas"),
            "round-robin-routing": ("n/a", "spec.engine.minReplicas"),
        }
    }


def test_without_its_runtime_nothing_is_derived_and_the_note_says_what_to_add() -> None:
    rc, out, err = audit("-f", str(CORPUS / ISVC), "--output", "json")
    assert (rc, out) == (2, "")
    assert (
        "InferenceService llama-3-1-8b-instruct/llama-3-1-8b-instruct: runtime srt-llama-3-1-8b-instruct is not "
        "in the input: add its ome.io ServingRuntime or ClusterServingRuntime" in err
    )


def test_a_scaled_engine_gets_the_cpu_hpa_and_its_router_picks_the_replica(tmp_path: Path) -> None:
    isvc = _isvc()
    isvc["spec"]["engine"]["maxReplicas"] = 3
    rc, found, err, records = _found(*_with(tmp_path, isvc))
    assert rc == 1, err
    assert {c: found[ENGINE][c] for c in ("autoscaler-utilization-signal", "autoscaler-cooldown-short")} == {
        "autoscaler-utilization-signal": ("fail", SCALE),  # no scaleMetric: cpu at 80 %
        "autoscaler-cooldown-short": ("fail", SCALE),  # no behavior: the HPA's 300 s window
    }
    assert found[ENGINE]["fixed-replicas"] == ("pass", "spec.engine.minReplicas")
    routing = next(r for r in records if r["check"] == "round-robin-routing")
    assert (routing["status"], routing["detail"]) == (
        "pass",
        "the InferenceService's router (sglang_router, service discovery) picks each request's replica",
    )
    signal = next(r for r in records if r["check"] == "autoscaler-utilization-signal")
    assert signal["detail"] == "scales on utilisation: hpa llama-3-1-8b-instruct-engine: resource:cpu"


def test_the_engine_fields_of_the_inference_service_override_the_runtime(tmp_path: Path) -> None:
    isvc = _isvc()
    isvc["spec"]["engine"]["terminationGracePeriodSeconds"] = 600
    isvc["spec"]["engine"]["runner"] = {
        "name": "ome-container",
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", "10"]}}},
        "args": ["--context-length", "8192"],
    }
    rc, found, err, _ = _found(*_with(tmp_path, isvc))
    assert rc == 1, err  # still one fixed replica
    assert {c: v for c, v in found[ENGINE].items() if v[0] == "fail"} == {
        "fixed-replicas": ("fail", "spec.engine.minReplicas")
    }
    # the runtime's probes and toleration stay: the runner is merged by name, not replaced
    assert found[ENGINE]["no-readiness-probe"] == ("pass", "spec.engine.runner.readinessProbe")
    assert found[ENGINE]["no-gpu-toleration"] == ("pass", "spec.engine.tolerations")


def test_an_engine_scaled_to_zero_is_serverless_and_named_in_a_note(tmp_path: Path) -> None:
    isvc = _isvc()
    isvc["spec"]["engine"]["minReplicas"] = 0
    rc, found, err, _ = _found(*_with(tmp_path, isvc))
    assert (rc, found) == (2, {})  # the router alone is no engine
    assert "spec.engine is deployed Serverless: only RawDeployment and MultiNode components are read" in err


def test_with_a_decoder_the_engine_is_never_serverless_and_a_router_at_zero_is(tmp_path: Path) -> None:
    isvc = _isvc()
    isvc["spec"]["engine"]["minReplicas"] = 0
    isvc["spec"]["decoder"] = {"minReplicas": 1}  # the runtime has no decoderConfig: no runner to run
    isvc["spec"]["router"]["minReplicas"] = 0
    rc, found, err, _ = _found(*_with(tmp_path, isvc))
    assert rc == 1, err
    assert list(found) == [ENGINE]
    assert found[ENGINE]["fixed-replicas"] == ("fail", "spec.engine.minReplicas")  # its HPA: at least 1, at most 1
    assert (
        "spec.decoder has no runner and no container: nothing to read; "
        "spec.router is deployed Serverless: only RawDeployment and MultiNode components are read" in err
    )


def test_malformed_resources_are_named_in_notes_not_tracebacks(tmp_path: Path) -> None:
    runtime = {"apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": "rt"},
               "spec": {"engineConfig": {"runner": "bad", "containers": [1]}}}  # fmt: skip
    docs = [
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "x"},
         "spec": {"runtime": {"name": "rt"}, "engine": "oops", "router": []}},
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "y"},
         "spec": {"runtime": {"name": "rt"}, "engine": {"minReplicas": 1}}},
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "z"}, "spec": {}},
        {"apiVersion": "serving.kserve.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": "kserve"}},
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "k"},
         "spec": {"runtime": {"name": "kserve"}, "engine": {}}},
        runtime,
    ]  # fmt: skip
    path = tmp_path / "odd.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    rc, out, err = audit("-f", str(path))
    assert (rc, out) == (2, "")
    assert "Traceback" not in err
    for note in (
        "InferenceService default/x: no spec.engine (a mapping): OME generates no engine without one",
        "InferenceService default/y: spec.engine has no runner and no container: nothing to read",
        "InferenceService default/z: no spec.runtime.name: OME picks a runtime by the model's format and size; name it",
        # KServe's runtime of that name is not OME's
        "InferenceService default/k: runtime kserve is not in the input: add its ome.io ServingRuntime or "
        "ClusterServingRuntime",
    ):
        assert note in err, note


def test_pd_sample_audits_the_leader_worker_engine_and_decoder() -> None:
    """deepseek-v3-pd: engine and decoder are MultiNode (a LeaderWorkerSet each, of `minReplicas` groups, no HPA
    and no PDB); the runtime gives their leaders the nvidia.com/gpu toleration and no probe at all."""
    rc, found, err, _ = _found(CORPUS.parent / "ome-deepseek-pd")
    assert rc == 1, err
    assert err == ""

    def expected(c: str) -> dict[str, tuple[str, str | None]]:
        at = f"spec.{c}.leader"
        sets = "not a field of the InferenceService: OME v0.1.5 sets it"
        return {
            **{k: ("n/a", sets) for k in ("autoscaler-utilization-signal", "autoscaler-scale-to-zero")},
            **{k: ("n/a", sets) for k in ("autoscaler-cooldown-short", "keda-null-as-zero")},
            "fixed-replicas": ("fail", f"spec.{c}.minReplicas"),
            "round-robin-routing": ("n/a", f"spec.{c}.minReplicas"),
            "no-readiness-probe": ("fail", f"{at}.runner.readinessProbe"),
            "no-startup-probe": ("pass", f"{at}.runner.startupProbe"),  # no liveness probe to kill a slow load
            "grace-period-short": ("fail", f"{at}.terminationGracePeriodSeconds"),
            "no-prestop": ("fail", f"{at}.runner.lifecycle.preStop"),
            "no-pdb": ("fail", None),
            "gpu-nodes-untainted": ("n/a", None),
            "no-gpu-toleration": ("pass", f"{at}.tolerations"),
            "non-gpu-pods-on-gpu-nodes": ("n/a", None),
            "time-slicing-user-facing": ("unknown", None),
            "context-oversized": ("fail", f"{at}.runner.args"),
            "ingress-timeout-short": ("n/a", None),
            "ingress-buffering": ("n/a", None),
        }

    assert found == {("InferenceService", f"deepseek-v3/{c}"): expected(c) for c in ("engine", "decoder")}
