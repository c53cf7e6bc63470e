"""RBG RoleBasedGroups (fixtures/audit_corpus/rbg-sglang): verdicts written by hand from RBG v0.7.0's sources
and the samples' role templates, findings on the role's fields to edit."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from tests.audit.test_command import audit
from tests.audit.test_command import audit_files as _found

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus" / "rbg-sglang"
# RBG adds no probe, preStop hook, toleration, grace period or PDB: each is the role template's
NO_AUTOSCALER = ("autoscaler-utilization-signal", "autoscaler-scale-to-zero", "autoscaler-cooldown-short",
                 "keda-null-as-zero")  # fmt: skip


def _adapter(group: str, role: str) -> str:
    """Where a role's autoscaler is set: RBG makes the adapter `<group>-<role>` an HPA of the user's targets."""
    return f"spec.roles[{role}].scalingAdapter (an HPA on RoleBasedGroupScalingAdapter {group}-{role})"


def _expected(role: str, at: str, readiness: str, startup: str, group: str) -> dict[str, tuple[str, str | None]]:
    pod = f"{at}.template.spec"
    return {
        **{c: ("n/a", _adapter(group, role)) for c in NO_AUTOSCALER},
        "fixed-replicas": ("fail", f"spec.roles[{role}].replicas"),
        "round-robin-routing": ("n/a", f"spec.roles[{role}].replicas"),
        "no-readiness-probe": (readiness, f"{pod}.containers[].readinessProbe"),
        "no-startup-probe": (startup, f"{pod}.containers[].startupProbe"),
        "grace-period-short": ("fail", f"{pod}.terminationGracePeriodSeconds"),
        "no-prestop": ("fail", f"{pod}.containers[].lifecycle.preStop"),
        "no-pdb": ("fail", None),
        "gpu-nodes-untainted": ("n/a", None),
        "no-gpu-toleration": ("unknown", f"{pod}.tolerations"),
        "non-gpu-pods-on-gpu-nodes": ("n/a", None),
        "time-slicing-user-facing": ("unknown", None),
        "context-oversized": ("fail", f"{pod}.containers[].args"),  # SGLang without --context-length
        "ingress-timeout-short": ("n/a", None),
        "ingress-buffering": ("n/a", None),
    }


def test_pd_sample_audits_prefill_and_decode_not_the_router() -> None:
    rc, found, err, _ = _found(CORPUS / "pd-disagg-standalone.yaml")
    assert rc == 1, err
    assert err == ""
    # readiness /health after 60 s; a liveness probe after 120 s and no startup probe: a slow load is killed
    assert found == {
        ("RoleBasedGroup", f"sglang-pd-inference/{role}"): _expected(
            role, f"spec.roles[{role}].standalonePattern", "pass", "fail", "sglang-pd-inference"
        )
        for role in ("prefill", "decode")
    }


def test_leader_worker_sample_has_no_probe_at_all() -> None:
    rc, found, err, _ = _found(CORPUS / "agg-leader-worker.yaml")
    assert rc == 1, err
    # one role: named after the group; no readiness probe, and no liveness probe to kill a slow start
    assert found == {
        ("RoleBasedGroup", "agg-lwd"): _expected(
            "backend", "spec.roles[backend].leaderWorkerPattern", "fail", "pass", "agg-lwd"
        )
    }


def _pd() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load((CORPUS / "pd-disagg-standalone.yaml").read_text()))


def test_a_role_template_with_its_patch_is_read_and_found_there(tmp_path: Path) -> None:
    rbg = _pd()
    decode = next(r for r in rbg["spec"]["roles"] if r["name"] == "decode")
    template = decode["standalonePattern"].pop("template")
    rbg["spec"]["roleTemplates"] = [{"name": "sglang", "template": template}]
    decode["standalonePattern"]["templateRef"] = {
        "name": "sglang",
        "patch": {"spec": {"containers": [{"name": "decode", "startupProbe": {
            "httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10, "failureThreshold": 90}}]}},
    }  # fmt: skip
    path = tmp_path / "rbg.yaml"
    path.write_text(yaml.safe_dump(rbg))
    rc, found, err, _ = _found(path)
    assert rc == 1, err
    # the patch merges the container by name: its readiness probe stays, its start-up probe is added
    decoded = found[("RoleBasedGroup", "sglang-pd-inference/decode")]
    assert decoded["no-startup-probe"] == ("pass", "spec.roleTemplates[sglang].template.spec.containers[].startupProbe")
    assert decoded["no-readiness-probe"] == (
        "pass", "spec.roleTemplates[sglang].template.spec.containers[].readinessProbe")  # fmt: skip


def test_a_custom_components_role_is_named_in_a_note(tmp_path: Path) -> None:
    rbg = _pd()
    rbg["spec"]["roles"][1]["scalingAdapter"] = {"enable": True}
    rbg["spec"]["roles"][2] = {"name": "decode", "replicas": 1, "customComponentsPattern": {"components": []}}
    path = tmp_path / "rbg.yaml"
    path.write_text(yaml.safe_dump(rbg))
    rc, out, err = audit("-f", str(path), "--output", "json")
    assert rc == 1
    assert {r["name"] for r in json.loads(out)} == {"sglang-pd-inference/prefill"}
    # an enabled scalingAdapter without an HPA in the input: a role of fixed replicas, and no note
    assert "audit: note: RoleBasedGroup default/sglang-pd-inference: spec.roles[decode].customComponentsPattern is " \
        "not read\n" in err  # fmt: skip
    assert "scalingAdapter" not in err


# The scaling sample's HPA (examples/basic/rbg/scaling/scaling-adapter-with-hpa.yaml): min 1, max 10, CPU at 80 %
def _sample_hpa() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((CORPUS / "scaling-adapter-with-hpa.yaml").read_text()) if d]
    (hpa,) = [d for d in docs if d["kind"] == "HorizontalPodAutoscaler"]
    return dict(hpa)


def test_the_scaling_sample_runs_no_engine_and_its_own_adapters_scale_nothing() -> None:
    """The sample writes two adapters of its own and an HPA on one; RBG v0.7.0 reconciles only the adapter the
    group owns (the one it makes, `<group>-<role>`), so neither written adapter scales its role: said in a note.
    Its roles run nginx on CPUs: no engine, nothing audited."""
    rc, found, err, _ = _found(CORPUS / "scaling-adapter-with-hpa.yaml")
    assert (rc, found) == (2, {})
    assert (
        "audit: note: RoleBasedGroup default/inference-cluster: RoleBasedGroupScalingAdapter prefill-scaling-adapter "
        "(spec.roles[prefill]) is not owned by the group: RBG scales a role only through the adapter the group "
        "owns, inference-cluster-prefill, made for scalingAdapter.enable: true; an autoscaler on "
        "prefill-scaling-adapter scales nothing; RoleBasedGroupScalingAdapter decode-scaling-adapter "
        "(spec.roles[decode]) is not owned by the group: RBG scales a role only through the adapter the group "
        "owns, inference-cluster-decode, made for scalingAdapter.enable: true; an autoscaler on "
        "decode-scaling-adapter scales nothing\n" in err
    )
    assert "skipped" not in err  # the adapters are read, not skipped as a kind no check reads


def test_an_hpa_on_the_adapter_rbg_makes_is_the_roles_autoscaler(tmp_path: Path) -> None:
    """The PD sample's prefill role with its scalingAdapter enabled and the scaling sample's HPA on the adapter
    RBG makes for it, `sglang-pd-inference-prefill`: the autoscaler checks judge the HPA, on the role."""
    rbg = _pd()
    prefill = next(r for r in rbg["spec"]["roles"] if r["name"] == "prefill")
    prefill["scalingAdapter"] = {"enable": True}
    hpa = _sample_hpa()
    hpa["spec"]["scaleTargetRef"]["name"] = "sglang-pd-inference-prefill"
    path = tmp_path / "rbg.yaml"
    path.write_text(yaml.safe_dump_all([rbg, hpa]))
    rc, found, err, _ = _found(path)
    assert rc == 1, err
    adapter = _adapter("sglang-pd-inference", "prefill")
    expected = _expected("prefill", "spec.roles[prefill].standalonePattern", "pass", "fail", "sglang-pd-inference")
    assert found[("RoleBasedGroup", "sglang-pd-inference/prefill")] == {
        **expected,
        "fixed-replicas": ("pass", "spec.roles[prefill].replicas"),  # scaled by hpa prefill-hpa
        "autoscaler-utilization-signal": ("fail", adapter),  # resource:cpu
        "autoscaler-scale-to-zero": ("pass", adapter),  # minReplicas 1
        "autoscaler-cooldown-short": ("fail", adapter),  # the HPA's default 300 s window < the 600 s cold start
        "keda-null-as-zero": ("n/a", adapter),  # not KEDA
        "round-robin-routing": ("unknown", "spec.roles[prefill].replicas"),  # up to 10; RBG's Service is headless
    }
    # decode has no autoscaler
    assert found[("RoleBasedGroup", "sglang-pd-inference/decode")] == _expected(
        "decode", "spec.roles[decode].standalonePattern", "pass", "fail", "sglang-pd-inference"
    )
    # without scalingAdapter.enable RBG makes no adapter: the same HPA scales nothing; so on the sample's own name
    for enable, target in ((False, "sglang-pd-inference-prefill"), (True, "prefill-scaling-adapter")):
        prefill["scalingAdapter"] = {"enable": enable}
        hpa["spec"]["scaleTargetRef"]["name"] = target
        path.write_text(yaml.safe_dump_all([rbg, hpa]))
        rc, found, err, _ = _found(path)
        assert found[("RoleBasedGroup", "sglang-pd-inference/prefill")] == expected, (enable, target)


def test_a_v1alpha1_role_template_and_leader_worker_set_are_read(tmp_path: Path) -> None:
    """The deprecated API: the role's own `template`, `leaderWorkerSet` with `patchLeaderTemplate`."""
    lwd = yaml.safe_load_all((CORPUS / "agg-leader-worker.yaml").read_text())
    role = next(d for d in lwd if d)["spec"]["roles"][0]
    pattern = role.pop("leaderWorkerPattern")
    role["template"] = pattern["template"]
    probe = {"httpGet": {"path": "/health", "port": 8001}, "periodSeconds": 10}
    role["leaderWorkerSet"] = {
        "size": 2,
        "patchLeaderTemplate": {"spec": {"containers": [{"name": "sglang", "readinessProbe": probe}]}},
    }
    rbg = {"apiVersion": "workloads.x-k8s.io/v1alpha1", "kind": "RoleBasedGroup",
           "metadata": {"name": "agg-lwd"}, "spec": {"roles": [role]}}  # fmt: skip
    path = tmp_path / "rbg.yaml"
    path.write_text(yaml.safe_dump(rbg))
    rc, found, err, _ = _found(path)
    assert rc == 1, err
    # the leader's patch gives it a readiness probe (the leader serves: the check reads it)
    assert found[("RoleBasedGroup", "agg-lwd")]["no-readiness-probe"] == (
        "pass", "spec.roles[backend].template.spec.containers[].readinessProbe")  # fmt: skip
    role["leaderWorkerSet"] = {"size": 2, "patchWorkerTemplate": role["leaderWorkerSet"]["patchLeaderTemplate"]}
    path.write_text(yaml.safe_dump(rbg))
    rc, found, err, _ = _found(path)
    assert rc == 1, err
    assert found[("RoleBasedGroup", "agg-lwd")]["no-readiness-probe"] == (
        "fail", "spec.roles[backend].template.spec.containers[].readinessProbe")  # fmt: skip
