"""KubeRay RayServices serving vLLM through Ray Serve LLM (fixtures/audit_corpus/kuberay-llm): verdicts written
by hand from KubeRay v1.7.0's sources and Ray Serve's defaults, findings on the RayService fields to edit."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.audit.test_command import audit
from tests.audit.test_command import audit_files as _found

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus" / "kuberay-llm"
SUMS = {
    "ray-service.llm-serve.yaml": "eee690b418fb1ec552a452634cf63ae0308f3bd4f257bf3227adcd3dd7b110ea",
    "ray-service.high-throughput-llm.yaml": "9d6b4de7a9719c2f1ca72a406f413ba01b9da3eeaf6d50d84fd2fd4fe4d29cea",
}
SERVE = "spec.serveConfigV2 applications[{app}].args.llm_configs[0]"
POD = "spec.rayClusterConfig.workerGroupSpecs[gpu-group].template.spec"
FRONTEND = {"ingress-timeout-short": ("n/a", None), "ingress-buffering": ("n/a", None)}
MANIFEST = {"gpu-nodes-untainted": ("n/a", None), "non-gpu-pods-on-gpu-nodes": ("n/a", None)}


def _fields(app: str, container: str) -> dict[str, str]:
    serve, c = SERVE.format(app=app), f"{POD}.containers[{container}]"
    return {
        "scaler": f"{serve}.deployment_config.autoscaling_config",
        "replicas": f"{serve}.deployment_config.num_replicas (or autoscaling_config)",
        "readiness": f"{c}.readinessProbe",
        "startup": f"{c}.startupProbe",
        "grace": f"{POD}.terminationGracePeriodSeconds",
        "prestop": f"{c}.lifecycle.preStop",
        "tolerations": f"{POD}.tolerations",
        "args": f"{serve}.engine_kwargs (e.g. max_model_len)",
    }


def test_samples_are_as_published() -> None:
    for name, digest in SUMS.items():
        assert hashlib.sha256((CORPUS / name).read_bytes()).hexdigest() == digest, name


def test_llm_serve_sample_autoscales_on_ongoing_requests_and_caps_the_context() -> None:
    rc, found, err, _ = _found(CORPUS / "ray-service.llm-serve.yaml")
    f = _fields("llms", "ray-worker")
    assert rc == 1, err
    assert found == {
        ("RayService", "ray-serve-llm"): {
            # autoscaling_config: 1 to 4 replicas at 64 ongoing requests each, downscale_delay_s unset (600 s)
            "autoscaler-utilization-signal": ("pass", f["scaler"]),
            "autoscaler-scale-to-zero": ("pass", f["scaler"]),
            "autoscaler-cooldown-short": ("pass", f["scaler"]),
            "keda-null-as-zero": ("n/a", f["scaler"]),
            "fixed-replicas": ("pass", f["replicas"]),
            # KubeRay's probes on a RayService worker: readiness (raylet and Serve proxy), liveness 30 + 5 × 120 s
            "no-readiness-probe": ("pass", f["readiness"]),
            "no-startup-probe": ("pass", f["startup"]),
            "grace-period-short": ("fail", f["grace"]),  # KubeRay sets none: the API's 30 s
            "no-prestop": ("fail", f["prestop"]),
            "no-pdb": ("fail", None),
            "no-gpu-toleration": ("unknown", f["tolerations"]),  # nvidia.com/gpu: 4, no toleration
            "time-slicing-user-facing": ("unknown", None),
            "round-robin-routing": ("pass", f["replicas"]),  # Ray Serve's router, not the Service
            "context-oversized": ("pass", f["args"]),  # engine_kwargs.max_model_len: 1024
            **FRONTEND,
            **MANIFEST,
        }
    }


def test_high_throughput_sample_runs_a_fixed_count_without_a_context_cap() -> None:
    rc, found, err, _ = _found(CORPUS / "ray-service.high-throughput-llm.yaml")
    f = _fields("llm_app", "llm")
    no_scaler = ("n/a", f["scaler"])
    assert rc == 1, err
    assert found == {
        ("RayService", "qwen-35-4b"): {
            "autoscaler-utilization-signal": no_scaler,
            "autoscaler-scale-to-zero": no_scaler,
            "autoscaler-cooldown-short": no_scaler,
            "keda-null-as-zero": no_scaler,
            "fixed-replicas": ("fail", f["replicas"]),  # num_replicas: 4
            "no-readiness-probe": ("pass", f["readiness"]),
            "no-startup-probe": ("pass", f["startup"]),
            "grace-period-short": ("fail", f["grace"]),
            "no-prestop": ("fail", f["prestop"]),
            "no-pdb": ("fail", None),
            "no-gpu-toleration": ("unknown", f["tolerations"]),  # a GKE nodeSelector, no toleration
            "time-slicing-user-facing": ("unknown", None),
            "round-robin-routing": ("pass", f["replicas"]),
            "context-oversized": ("fail", f["args"]),  # no engine_kwargs at all
            **FRONTEND,
            **MANIFEST,
        }
    }


def _sample() -> dict[str, Any]:
    docs = list(yaml.safe_load_all((CORPUS / "ray-service.llm-serve.yaml").read_text()))
    return copy.deepcopy(next(d for d in docs if d["kind"] == "RayService"))


PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "gpu-group"},
    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"ray.io/group": "gpu-group"}}},
}


def test_a_healthy_variant_fails_nothing(tmp_path: Path) -> None:
    """What the user adds on top of KubeRay's defaults (probes, routing) and Ray Serve's (the 600 s delay)."""
    rs = _sample()
    pod = rs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]
    pod["terminationGracePeriodSeconds"] = 300
    pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod["containers"][0]["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", "10"]}}}
    path = tmp_path / "rayservice.yaml"
    path.write_text(yaml.safe_dump_all([rs, PDB]))
    rc, found, err, _ = _found(path)
    assert rc == 0, err
    statuses = found[("RayService", "ray-serve-llm")]
    assert {c for c, (status, _) in statuses.items() if status in ("fail", "unknown")} == {"time-slicing-user-facing"}
    assert statuses["no-pdb"] == ("pass", None)


def _serve(rs: dict[str, Any], serve: Any) -> dict[str, Any]:
    rs["spec"]["serveConfigV2"] = serve if isinstance(serve, str) else yaml.safe_dump(serve)
    return rs


def _config(**deployment: Any) -> dict[str, Any]:
    return {
        "applications": [
            {
                "name": "llms",
                "import_path": "ray.serve.llm:build_openai_app",
                "args": {
                    "llm_configs": [
                        {
                            "model_loading_config": {"model_id": "qwen"},
                            "engine_kwargs": {"max_model_len": 8192, "enforce_eager": True},
                            "deployment_config": deployment,
                        }
                    ]
                },
            }
        ]
    }


def test_ray_serve_autoscaler_to_zero_with_a_short_delay(tmp_path: Path) -> None:
    rs = _serve(_sample(), _config(autoscaling_config={"min_replicas": 0, "max_replicas": 2, "downscale_delay_s": 60}))
    path = tmp_path / "rs.yaml"
    path.write_text(yaml.safe_dump(rs))
    rc, out, _ = audit("-f", str(path), "--output", "json")
    records = {r["check"]: r for r in json.loads(out)}
    assert rc == 1
    assert records["autoscaler-scale-to-zero"]["status"] == "fail"
    assert records["autoscaler-scale-to-zero"]["detail"] == "ray-serve ray-serve-llm:qwen: minimum 0"
    assert records["autoscaler-cooldown-short"]["detail"] == (
        "scales down after less than the cold start (600 s): ray-serve ray-serve-llm:qwen: downscale_delay_s 60 s"
    )
    assert records["context-oversized"]["detail"] == "--max-model-len 8192"


def test_several_models_are_one_workload_each_and_head_gpus_serve_without_workers(tmp_path: Path) -> None:
    config = _config(num_replicas=2)
    second = copy.deepcopy(config["applications"][0]["args"]["llm_configs"][0])
    second["model_loading_config"]["model_id"] = "llama"
    config["applications"][0]["args"]["llm_configs"].append(second)
    rs = _serve(_sample(), config)
    cluster = rs["spec"]["rayClusterConfig"]
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"]["limits"]["nvidia.com/gpu"] = "1"
    del cluster["workerGroupSpecs"]
    path = tmp_path / "rs.yaml"
    path.write_text(yaml.safe_dump(rs))
    rc, found, err, _ = _found(path)
    assert set(found) == {("RayService", "ray-serve-llm/qwen"), ("RayService", "ray-serve-llm/llama")}
    llama = found[("RayService", "ray-serve-llm/llama")]
    assert llama["context-oversized"] == (
        "pass",
        "spec.serveConfigV2 applications[llms].args.llm_configs[1].engine_kwargs (e.g. max_model_len)",
    )
    assert (
        llama["no-prestop"][1]
        == "spec.rayClusterConfig.headGroupSpec.template.spec.containers[ray-head].lifecycle.preStop"
    )
    assert llama["round-robin-routing"][0] == "pass"
    assert rc == 1, err


@pytest.mark.parametrize(
    ("serve", "note"),
    [
        (None, "no spec.serveConfigV2 (a YAML string of Ray Serve applications)"),
        ("applications: [", "spec.serveConfigV2 is not YAML: while parsing a flow node"),
        ("- a list", "spec.serveConfigV2 is not a mapping of Ray Serve settings"),
        (
            {"applications": [{"name": "app", "import_path": "my_app:app"}]},
            "no Ray Serve LLM application (import_path ray.serve.llm:…) in spec.serveConfigV2",
        ),
        (
            {"applications": [{"name": "a", "import_path": "ray.serve.llm:build_openai_app",
                               "args": {"llm_configs": ["./configs/qwen.yaml"]}}]},
            "(spec.serveConfigV2 applications[a].args.llm_configs[0] is str, not a mapping: not read)",
        ),
    ],
)  # fmt: skip
def test_an_unreadable_serve_config_is_a_note(tmp_path: Path, serve: Any, note: str) -> None:
    rs = _sample()
    if serve is None:
        del rs["spec"]["serveConfigV2"]
    else:
        _serve(rs, serve)
    path = tmp_path / "rs.yaml"
    path.write_text(yaml.safe_dump(rs))
    rc, out, err = audit("-f", str(path))
    assert rc == 2  # no engine workload
    assert "audit: note: RayService default/ray-serve-llm: " in err
    assert note in err
    assert "Traceback" not in err + out


def test_odd_cluster_shapes_are_notes_or_defaults(tmp_path: Path) -> None:
    rs = _serve(_sample(), _config())
    rs["spec"]["rayClusterConfig"] = {"workerGroupSpecs": "gpu-group", "headGroupSpec": {"template": {}}}
    path = tmp_path / "rs.yaml"
    path.write_text(yaml.safe_dump(rs))
    rc, _, err = audit("-f", str(path))
    assert rc == 2
    assert "RayService default/ray-serve-llm: spec.rayClusterConfig.headGroupSpec.template has no container" in err
    rs = _serve(_sample(), _config(num_replicas="two", autoscaling_config="fast"))
    path.write_text(yaml.safe_dump(rs))
    rc, found, err, _ = _found(path)
    assert rc == 1, err
    at = "spec.serveConfigV2 applications[llms].args.llm_configs[0]"
    assert (
        f"{at}.deployment_config.autoscaling_config is not a mapping: read as unset; "
        f"{at}.deployment_config.num_replicas 'two' is not a count: read as 1"
    ) in err
    # neither a count nor a mapping: read as Ray Serve's default of one fixed replica
    assert found[("RayService", "ray-serve-llm")]["fixed-replicas"][0] == "fail"
    assert found[("RayService", "ray-serve-llm")]["round-robin-routing"][0] == "n/a"


def test_num_replicas_auto_is_ray_serves_autoscaler(tmp_path: Path) -> None:
    rs = _serve(_sample(), _config(num_replicas="auto"))
    path = tmp_path / "rs.yaml"
    path.write_text(yaml.safe_dump(rs))
    rc, out, err = audit("-f", str(path), "--output", "json")
    records = {r["check"]: (r["status"], r["detail"]) for r in json.loads(out)}
    assert rc == 1, err
    assert records["fixed-replicas"] == ("pass", "scaled by ray-serve ray-serve-llm:qwen")
    assert records["autoscaler-cooldown-short"][0] == "pass"  # downscale_delay_s 600 by default
    assert "note" not in err
