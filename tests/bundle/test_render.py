"""The committed bundle is exactly what the sources render (run with UPDATE_GOLDEN=1 to regenerate); the
shipped copy and its rewrites give what the sources render for every `--out` option; `render --out DIR`
writes all of its files or none, and answers a bad --out or --root with one line and exit 2."""

from __future__ import annotations

import argparse
import itertools
import os
import stat
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from alerts import formats
from alerts.thresholds import RUNBOOK_URL
from exporter.bundle import options, render, shipped, write
from tests import golden

SLO_ENGINES = ("vllm", "sglang", "trtllm", "lmdeploy")  # the engines that serve at least one SLO
EXPECTED = {
    "dashboards/overview.json",
    "alerts/llm-exporter.rules.yaml",
    "alerts/grafana-alert-rules.json",
    "alerts/vllm-compat.rules.yaml",
    "deploy/base/generated/prometheusrule.yaml",
    "deploy/base/generated/dashboard-configmap.yaml",
    "charts/llm-inference-exporter/files/llm-exporter.rules.yaml",
    "charts/llm-inference-exporter/files/dashboards/llm-inference-overview.json",
    "charts/llm-inference-exporter/files/rbac-rules.yaml",
    # the same rules and dashboards for many clusters (tests/bundle/test_cluster.py)
    "charts/llm-inference-exporter/files/clustered/llm-exporter.rules.yaml",
    "charts/llm-inference-exporter/files/clustered/dashboards/llm-inference-overview.json",
    "deploy/examples/multi-cluster/generated/prometheusrule.yaml",
    "deploy/examples/multi-cluster/generated/dashboard-configmap.yaml",
    # the Grafana-managed rules for the chart's grafanaAlertRules, both ways
    "charts/llm-inference-exporter/files/grafana-alert-rules.json",
    "charts/llm-inference-exporter/files/clustered/grafana-alert-rules.json",
    # the package's copy, from which an installed exporter renders `--out`
    "exporter/bundle/data/llm-exporter.rules.yaml",
    "exporter/bundle/data/prometheusrule.yaml",
    "exporter/bundle/data/grafana-alert-rules.json",
    "exporter/bundle/data/dashboards/llm-inference-overview.json",
    # the SLO objects per engine (tests/bundle/test_slo.py) and the mixin's data (tests/bundle/test_mixin.py)
    *(
        f"deploy/slo/{tool}/{engine}.yaml"
        for tool in ("sloth", "pyrra")
        for engine in ("vllm", "sglang", "trtllm", "lmdeploy")
    ),
    "deploy/slo/README.md",
    *(f"exporter/bundle/data/slo/{tool}-{engine}.yaml" for tool in ("sloth", "pyrra") for engine in SLO_ENGINES),
    "exporter/bundle/data/slo/README.md",
    "mixin/generated/rules.json",
    "mixin/generated/rules-clustered.json",
    "mixin/generated/thresholds.json",
    "mixin/generated/dashboards/llm-inference-overview.json",
    "mixin/generated/dashboards-clustered/llm-inference-overview.json",
    "mixin/generated/dashboards.libsonnet",
    "mixin/generated/dashboards-clustered.libsonnet",
    # the dashboards' Perses twins (tests/bundle/test_perses.py): plain, for the chart (both ways), kustomize
    "dashboards/overview.perses.yaml",
    "charts/llm-inference-exporter/files/perses/llm-inference-overview.yaml",
    "charts/llm-inference-exporter/files/clustered/perses/llm-inference-overview.yaml",
    "deploy/examples/perses/generated/persesdashboards.yaml",
}
ALERT_FILES = ["llm-exporter.rules.yaml", "prometheusrule.yaml", "grafana-alert-rules.json"]


def test_committed_bundle_matches_its_sources() -> None:
    for rel, text in render.outputs().items():
        golden.check(render.ROOT / rel, text)  # `python -m exporter.bundle` regenerates them too
    assert render.drifted() == []


def test_rendering_is_byte_identical_and_complete() -> None:
    first, second = render.outputs(), render.outputs()
    assert first == second
    assert set(first) == EXPECTED


def test_check_lists_drifted_and_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = render.outputs()
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "alerts/llm-exporter.rules.yaml").write_text(files["alerts/llm-exporter.rules.yaml"] + "# edit\n")
    (tmp_path / "dashboards/overview.json").unlink()
    assert render.drifted(tmp_path, render=lambda _root: files) == [
        "dashboards/overview.json",
        "alerts/llm-exporter.rules.yaml",
    ]
    code = render.run(argparse.Namespace(check=True, root=render.ROOT))
    assert (code, capsys.readouterr().out) == (0, "bundle up to date\n")


def test_manifests_wrap_the_rule_file_and_the_dashboard() -> None:
    files = render.outputs()
    rule = yaml.safe_load(files["deploy/base/generated/prometheusrule.yaml"])
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["spec"] == yaml.safe_load(files["alerts/llm-exporter.rules.yaml"])
    configmap = yaml.safe_load(files["deploy/base/generated/dashboard-configmap.yaml"])
    assert configmap["kind"] == "ConfigMap"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["data"] == {"llm-inference-overview.json": files["dashboards/overview.json"]}


def test_manifests_validate_against_the_kubernetes_schema() -> None:
    files = render.outputs()
    configmap = yaml.safe_load(files["deploy/base/generated/dashboard-configmap.yaml"])
    kubernetes_validate.validate(configmap, "1.30", strict=True)


# --- `--out` from the shipped files: the sources' rendering, byte for byte --------------------------------

URL = "https://runbooks.example.com/llm-exporter.md"
# a URL the generator and the rewrite could disagree on: quotes, &, a `$value` Grafana's templates would take
ODD_URL = 'https://wiki.example.com/llm?page="runbook"&v=$value/é'


def test_the_shipped_files_are_the_committed_rendering() -> None:
    files = render.outputs()
    assert shipped.alert_files() == {
        "llm-exporter.rules.yaml": files["alerts/llm-exporter.rules.yaml"],
        "prometheusrule.yaml": files["deploy/base/generated/prometheusrule.yaml"],
        "grafana-alert-rules.json": files["alerts/grafana-alert-rules.json"],
    }
    assert shipped.dashboards() == {"llm-inference-overview.json": files["dashboards/overview.json"]}
    # the rewrites know the generator's defaults
    assert options.RELATIVE_RUNBOOK == RUNBOOK_URL
    assert formats.GRAFANA_DATASOURCE_UID == "prometheus"


@pytest.mark.parametrize(
    ("url", "label", "uid"),
    list(
        itertools.product([None, URL, ODD_URL], [None, "cluster", "region"], [None, "prometheus", "P1809F7CD0C75ACF3"])
    ),
)
def test_the_shipped_files_rewritten_are_what_the_sources_render(url: str | None, label: str | None,
                                                                 uid: str | None) -> None:  # fmt: skip
    from_sources = render.out_files(render.ROOT, url, label, uid)
    assert sorted(from_sources) == sorted(ALERT_FILES + (["llm-inference-overview.json"] if label else []))
    assert shipped.out_files(url, label, uid) == from_sources


def llm_exporter(*args: str, cwd: Path = render.ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "render", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_datasource_uid_changes_only_the_queries_data_source(tmp_path: Path) -> None:
    done = llm_exporter("--out", str(tmp_path), "--datasource-uid", "P1809F7CD0C75ACF3")
    assert (done.returncode, done.stderr) == (0, "")
    committed = render.outputs()["alerts/grafana-alert-rules.json"]
    text = (tmp_path / "grafana-alert-rules.json").read_text(encoding="utf-8")
    assert text.count('"datasourceUid": "P1809F7CD0C75ACF3"') == committed.count('"datasourceUid": "prometheus"') > 20
    assert text.count('"datasource": "P1809F7CD0C75ACF3"') == committed.count('"datasource": "prometheus"') > 20
    assert '"datasourceUid": "-100"' in text  # Grafana's expressions stay
    unchanged = text.replace('"datasourceUid": "P1809F7CD0C75ACF3"', '"datasourceUid": "prometheus"')
    assert unchanged.replace('"datasource": "P1809F7CD0C75ACF3"', '"datasource": "prometheus"') == committed
    assert (tmp_path / "llm-exporter.rules.yaml").read_text() == render.outputs()["alerts/llm-exporter.rules.yaml"]


@pytest.mark.parametrize("value", ["", "a.b", "uid with space", "x" * 41, "ünï"])
def test_a_datasource_uid_grafana_would_not_take_fails(tmp_path: Path, value: str) -> None:
    done = llm_exporter("--out", str(tmp_path / "out"), "--datasource-uid", value)
    assert done.returncode == 2
    assert f"argument --datasource-uid: {value!r} is not a Grafana data source uid (1 to 40 letters" in done.stderr
    assert not (tmp_path / "out").exists()
    one_line_error(
        llm_exporter("--datasource-uid", "abc"),
        "--datasource-uid needs --out DIR: the generated files in the repository keep uid prometheus",
    )


# --- `--out DIR`: all or nothing, and a bad DIR or --root in one line ----------------------------------------


def one_line_error(done: subprocess.CompletedProcess[str], message: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr == f"llm-exporter render: error: {message}\n"  # one line, no traceback


def test_out_on_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "alerts.yaml"
    target.write_text("mine\n")
    one_line_error(llm_exporter("--out", str(target)), f"--out {target}: is a file, not a folder")
    one_line_error(
        llm_exporter("--out", str(target / "sub")), f"--out {target / 'sub'}: {target} is a file, not a folder"
    )
    assert target.read_text() == "mine\n"


def test_out_where_not_even_root_may_write() -> None:
    # /proc takes no new file or folder whoever asks, root included
    one_line_error(
        llm_exporter("--out", "/proc"), "--out /proc: cannot write a file in /proc: No such file or directory"
    )
    one_line_error(
        llm_exporter("--out", "/proc/llm-exporter-alerts"),
        "--out /proc/llm-exporter-alerts: cannot create the folder /proc/llm-exporter-alerts: "
        "No such file or directory",
    )


def test_out_in_a_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "llm-exporter.rules.yaml").write_text("old\n")
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip(
                "this user writes in a folder without write permission (root's CAP_DAC_OVERRIDE); /proc stands in above"
            )
        one_line_error(
            llm_exporter("--out", str(folder)), f"--out {folder}: cannot write a file in {folder}: Permission denied"
        )
        new = folder / "alerts"
        one_line_error(
            llm_exporter("--out", str(new)), f"--out {new}: cannot create the folder {new}: Permission denied"
        )
        assert [(p.name, p.read_text()) for p in folder.iterdir()] == [("llm-exporter.rules.yaml", "old\n")]
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("args", [("--out", "DIR"), ("--check",), ()])
def test_root_that_is_not_a_checkout(tmp_path: Path, args: tuple[str, ...]) -> None:
    root = tmp_path / "clone"
    (root / "dashboards").mkdir(parents=True)
    argv = [a.replace("DIR", str(tmp_path / "out")) for a in args]
    for bad, problem in (
        (root, f"{root} has no alerts/formats.py"),
        (tmp_path / "none", f"{tmp_path / 'none'} is not a folder"),
    ):
        one_line_error(
            llm_exporter("--root", str(bad), *argv),
            "--root must be a source checkout of llm-inference-exporter (the folder holding alerts/ and dashboards/): "
            + problem,
        )
    assert not (tmp_path / "out").exists()
    # a checkout is read wherever the command runs
    done = llm_exporter("--root", str(render.ROOT), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"wrote {tmp_path / 'out' / name}" for name in ALERT_FILES]


def test_a_file_that_cannot_be_replaced_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "llm-exporter.rules.yaml").write_text("old rules\n")
    (tmp_path / "grafana-alert-rules.json").mkdir()  # a folder where a file goes: found before anything moves
    one_line_error(
        llm_exporter("--out", str(tmp_path)),
        f"--out {tmp_path}: {tmp_path / 'grafana-alert-rules.json'} is a folder; "
        "the file grafana-alert-rules.json goes there",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grafana-alert-rules.json", "llm-exporter.rules.yaml"]
    assert (tmp_path / "llm-exporter.rules.yaml").read_text() == "old rules\n"


def test_a_write_failing_half_way_leaves_no_file_and_no_new_folder(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("old a\n")
    # a name of 250 bytes is a file name, its temporary one (.NAME.XXXXXXXX.tmp) too long: it fails after the first
    files = {"a.yaml": "new a\n", "b" * 250: "new b\n"}
    with pytest.raises(write.OutError, match=f"^cannot write a file in {tmp_path}: File name too long$"):
        write.write_files(tmp_path, files)
    assert [(p.name, p.read_text()) for p in tmp_path.iterdir()] == [("a.yaml", "old a\n")]
    new = tmp_path / "new" / "alerts"
    with pytest.raises(write.OutError):
        write.write_files(new, files)
    assert not (tmp_path / "new").exists()


def test_out_replaces_the_old_files_readable_as_plain_writes_are(tmp_path: Path) -> None:
    (tmp_path / "llm-exporter.rules.yaml").write_text("old rules\n")
    (tmp_path / "notes.txt").write_text("mine\n")
    done = llm_exporter("--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    expected = render.out_files(render.ROOT, None, None, None)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {**expected, "notes.txt": "mine\n"}
    plain = stat.S_IMODE((tmp_path / "notes.txt").stat().st_mode)
    assert {stat.S_IMODE((tmp_path / name).stat().st_mode) for name in expected} == {plain}
