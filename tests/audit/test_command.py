"""`llm-exporter audit -f`: manifests in, text / JSON / SARIF out, exit 0 / 1 / 2; bad input named."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.cli import parser
from tests.audit import objects as o
from tests.audit.test_checks import healthy

ROOT = Path(__file__).resolve().parents[2]


def audit(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    from exporter.audit.cli import run

    args = parser("audit").parse_args(["audit", *argv])
    out, err = io.StringIO(), io.StringIO()
    rc = run(args, out, err, io.StringIO(stdin))
    return rc, out.getvalue(), err.getvalue()


Found = dict[tuple[str, str], dict[str, tuple[str, str | None]]]  # (kind, name) -> check -> (status, field)


def audit_files(*paths: Path) -> tuple[int, Found, str, list[Any]]:
    """`audit -f` of `paths` as JSON: the exit code, each workload's checks, stderr and the records."""
    rc, out, err = audit(*(a for p in paths for a in ("-f", str(p))), "--output", "json")
    records = json.loads(out or "[]")
    found: Found = {}
    for r in records:
        found.setdefault((r["kind"], r["name"]), {})[r["check"]] = (r["status"], r["field"])
    return rc, found, err, records


def _write(path: Path, objs: list[o.Obj]) -> Path:
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return path


def test_healthy_manifests_exit_0(tmp_path: Path) -> None:
    rc, out, err = audit("-f", str(_write(tmp_path / "ok.yaml", healthy())))
    assert rc == 0, out + err
    assert out.endswith("1 engine workload(s): 0 failing, 1 unknown, 15 passing, 2 not applicable\n")
    assert err == ""


def test_failing_exit_1_and_json_fields(tmp_path: Path) -> None:
    objs = [o.changed(o.engine(), lifecycle=None), *healthy()[1:]]
    rc, out, _ = audit("-f", str(_write(tmp_path / "x.yaml", objs)), "--output", "json")
    assert rc == 1
    records = json.loads(out)
    assert len(records) == 18
    (prestop,) = [r for r in records if r["check"] == "no-prestop"]
    assert prestop == {
        "namespace": "inference",
        "kind": "Deployment",
        "name": "vllm",
        "check": "no-prestop",
        "status": "fail",
        "severity": "warning",
        "reason": prestop["reason"],
        "fix": prestop["fix"],
        "threshold_source": "default",
        "detail": "container vllm has no lifecycle.preStop",
        "threshold": None,
        "field": None,
        "engine": "vllm",
    }
    (grace,) = [r for r in records if r["check"] == "grace-period-short"]
    assert (grace["status"], grace["threshold"], grace["threshold_source"]) == ("pass", 30.0, "default")


def test_stdin_lists_and_helm_style_documents() -> None:
    text = (
        "---\n# Source: chart/templates/x.yaml\n"
        + yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [o.engine(), o.pdb()]})
        + "---\n---\n"
    )
    rc, out, _err = audit("-f", "-", stdin=text)
    assert rc == 1
    assert "inference/Deployment/vllm  (<stdin>:3)" in out
    assert "no-pdb" not in out  # the PDB in the List was read


def test_unknown_kinds_are_noted_and_skipped(tmp_path: Path) -> None:
    isvc = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "InferenceGraph", "metadata": {"name": "m"}}
    rc, _out, err = audit("-f", str(_write(tmp_path / "m.yaml", [*healthy(), isvc, {"kind": "ConfigMap"}])))
    assert rc == 0
    assert err == "audit: note: skipped 1 serving.kserve.io/v1alpha1/InferenceGraph (no check reads this kind)\n"


def test_broken_yaml_is_named_and_the_rest_still_audited(tmp_path: Path) -> None:
    good = _write(tmp_path / "a.yaml", [o.changed(o.engine(), lifecycle=None), *healthy()[1:]])
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: [unclosed\n")
    rc, out, err = audit("-f", str(tmp_path))
    assert rc == 2
    assert err.startswith(f"audit: {tmp_path / 'b.yaml'}:5:1: not YAML")
    assert "FAIL no-prestop" in out and str(good) in out


def test_an_unrendered_helm_template_is_named_with_the_command_that_renders_it(tmp_path: Path) -> None:
    (tmp_path / "deployment.yaml").write_text(
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include "vllm.fullname" . }}\n'
        "spec:\n  replicas: {{ .Values.replicas }}\n"
    )
    rc, out, err = audit("-f", str(tmp_path / "deployment.yaml"))
    assert (rc, out) == (2, "")
    assert err.splitlines()[0] == (
        f"audit: {tmp_path / 'deployment.yaml'}: an unrendered Helm template (line 4: name: {{{{ include "
        '"vllm.fullname" . }}), not YAML; render it first: `helm template <release> <chart> | llm-exporter audit -f -`'
    )
    assert err.splitlines()[1].endswith("nothing audited (and the files named above could not be read)")


def test_a_chart_folder_names_each_template(tmp_path: Path) -> None:
    rc, _, err = audit("-f", str(ROOT / "charts"))
    templates = sorted((ROOT / "charts").rglob("templates/*.yaml"))
    named = sorted(line.split(": ")[1] for line in err.splitlines() if "an unrendered Helm template" in line)
    assert rc == 2 and templates and named == [str(t) for t in templates]


def test_closed_standard_input_is_named() -> None:
    from exporter.audit.cli import read_manifests

    _, clean = read_manifests(["-"], None, err := io.StringIO(), "default")
    assert (clean, err.getvalue()) == (False, "audit: <stdin>: cannot read: standard input is closed\n")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("kind: !!bool x\n", "not YAML: KeyError: 'x'"),
        ("metadata: {creationTimestamp: 2001-13-45}\n", "not YAML: ValueError: month must be in 1..12"),
        ("[" * 600, "not YAML: nested too deeply"),
    ],
)
def test_text_pyyaml_cannot_build_is_named(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "x.yaml").write_text(text)
    rc, _, err = audit("-f", str(tmp_path / "x.yaml"))
    assert (rc, err.splitlines()[0]) == (2, f"audit: {tmp_path / 'x.yaml'}: {error}")


@pytest.mark.parametrize(("text", "error"), [("a: !!bool x\n", "KeyError: 'x'"), ("[" * 600, "nested too deeply")])
def test_a_kubeconfig_pyyaml_cannot_build_is_named(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "kubeconfig").write_text(text)
    rc, out, err = audit("--kubeconfig", str(tmp_path / "kubeconfig"))
    assert (rc, out, err) == (2, "", f"audit: no Kubernetes configuration ({tmp_path / 'kubeconfig'}): {error}\n")


def test_an_empty_file_name_is_refused_not_read_as_the_working_directory(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parser("audit").parse_args(["audit", "-f", ""])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith("error: argument -f/--filename: an empty file name\n")


def test_a_control_character_is_bad_yaml(tmp_path: Path) -> None:
    (tmp_path / "nul.yaml").write_text("apiVersion: v1\nkind: Service\x00\n")
    rc, _, err = audit("-f", str(tmp_path / "nul.yaml"))
    assert rc == 2
    assert err.startswith(f"audit: {tmp_path / 'nul.yaml'}: not YAML: unacceptable character #x0000")


def test_a_scalar_document_and_an_unreadable_file(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("just text\n")
    rc, _, err = audit("-f", str(tmp_path / "s.yaml"), "-f", str(tmp_path / "missing.yaml"))
    assert rc == 2
    assert "audit: note: skipped 1 document(s) that are not Kubernetes objects (no kind)" in err
    assert f"{tmp_path / 'missing.yaml'}: cannot read: No such file or directory" in err


def test_no_engine_workload_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    router = o.engine("router", image="lmcache/lmstack-router:latest", args=("--routing-logic", "roundrobin"))
    rc, out, err = audit("-f", str(_write(tmp_path / "r.yaml", [router, o.service("router")])))
    assert (rc, out) == (2, "")
    assert "no engine workload found (1 Deployment/StatefulSet/LeaderWorkerSet read" in err


def test_the_repositorys_own_deploy_has_no_engine_to_audit() -> None:
    # deploy/ holds the exporter itself (a Deployment and a DaemonSet, not engines) and a KEDA example whose
    # target Deployment is the user's: nothing to audit there, said as such
    rc, out, err = audit("-f", str(ROOT / "deploy"))
    assert rc == 2 and out == ""
    assert (
        "no engine workload found (1 Deployment/StatefulSet/LeaderWorkerSet read: "
        "default/Deployment/llm-exporter-cluster;" in err
    )


def test_the_keda_example_passes_beside_an_engine(tmp_path: Path) -> None:
    # the repository's example ScaledObject, applied to a Deployment of that name: every autoscaler check passes
    engine = o.engine("vllm-llama")
    _write(tmp_path / "engine.yaml", [engine, o.pdb("vllm-llama"), o.inference_pool("vllm-llama")])
    rc, out, _err = audit(
        "-f", str(tmp_path / "engine.yaml"), "-f", str(ROOT / "deploy/examples/keda-scaledobject.yaml"), "-v"
    )
    assert rc == 0, out
    for check in ("autoscaler-utilization-signal", "autoscaler-scale-to-zero", "autoscaler-cooldown-short",
                  "keda-null-as-zero", "fixed-replicas"):  # fmt: skip
        assert f"ok   {check} " in out


def test_manifests_refuse_live_options(tmp_path: Path) -> None:
    rc, _, err = audit("-f", str(tmp_path), "--prometheus", "http://localhost:9090")
    assert rc == 2 and "--prometheus and --kubeconfig are for a live cluster" in err


def test_live_without_a_configuration_or_a_reachable_cluster(tmp_path: Path) -> None:
    rc, out, err = audit("--kubeconfig", str(tmp_path / "missing"))
    assert (rc, out) == (2, "")
    assert err.startswith(f"audit: no Kubernetes configuration ({tmp_path / 'missing'})")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    rc, out, err = audit("--kubeconfig", str(kubeconfig), "--timeout", "1")
    assert (rc, out) == (2, "")
    assert err.startswith("audit: within 1 s, still waiting for the first sync of deployments, statefulsets,")
    assert err.endswith(", nodes, kserve_inferenceservices, kserve_servingruntimes, kserve_clusterservingruntimes, "
                        "workspaces, inferencesets, rayservices, nimservices, ome_inferenceservices, "
                        "ome_servingruntimes, ome_clusterservingruntimes, rolebasedgroups, "
                        "rolebasedgroupscalingadapters, dynamographdeployments, pods)\n")  # fmt: skip
    assert "(API server: cannot connect: Connection refused on deployments, " in err


@pytest.mark.parametrize("timeout", ["nan", "inf", "1e999", "0", "-1", "soon"])
def test_a_timeout_that_would_wait_forever_is_refused(timeout: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parser("audit").parse_args(["audit", "--timeout", timeout])
    assert exited.value.code == 2
    assert "argument --timeout: " in capsys.readouterr().err
