"""The release workflow (.github/workflows/release.yml): actionlint finds nothing in any workflow, the image
and chart it publishes are the ones the chart, the kustomize base and the install guide name, every action
is pinned to a commit, and its version check passes on this tree's tag and fails on any other."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.helm import CHART, helm
from tests.deploy.manifests import BASE, IMAGE, ROOT, render
from tests.peers import peer

WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
CHART_META = yaml.safe_load((CHART / "Chart.yaml").read_text())
VERSION = CHART_META["version"]


def workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(RELEASE.read_text())
    return loaded


def steps() -> list[dict[str, Any]]:
    (job,) = workflow()["jobs"].values()
    found: list[dict[str, Any]] = job["steps"]
    return found


def step(step_id: str) -> dict[str, Any]:
    (found,) = [s for s in steps() if s.get("id") == step_id]
    return found


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    # shellcheck and pyflakes off: they join in only where installed, and the verdict must be the same everywhere
    return subprocess.run(
        [peer("actionlint"), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


def test_actionlint_finds_nothing_in_any_workflow() -> None:
    files = sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))
    assert RELEASE in files
    result = actionlint(*files)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_actionlint_reports_a_broken_workflow(tmp_path: Path) -> None:
    """So the lint above can fail: an unknown permission scope and an undefined step output."""
    broken = RELEASE.read_text().replace("id-token: write", "id_token: write")
    broken = broken.replace("steps.image.outputs.digest", "steps.imgae.outputs.digest")
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "release.yml").write_text(broken)
    result = actionlint(folder / "release.yml")
    assert result.returncode == 1
    assert 'unknown permission scope "id_token"' in result.stdout, result.stdout
    assert 'property "imgae" is not defined' in result.stdout, result.stdout


def test_it_publishes_the_image_and_chart_the_install_names() -> None:
    env = workflow()["env"]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert env["IMAGE"] == values["image"]["repository"] == IMAGE
    base_images = {
        c["image"].rsplit(":", 1)[0]
        for o in render(BASE)
        if o["kind"] in ("DaemonSet", "Deployment")
        for c in o["spec"]["template"]["spec"]["containers"]
    }
    assert base_images == {env["IMAGE"]}
    assert (ROOT / env["CHART"]).resolve() == CHART
    assert CHART.name == CHART_META["name"]  # `helm package` names the archive after the chart
    owner = env["IMAGE"].split("/")[1]
    assert env["CHART_REGISTRY"] == f"oci://ghcr.io/{owner}/charts"
    published = f"{env['CHART_REGISTRY']}/{CHART_META['name']}"
    for page in (ROOT / "docs" / "install.md", CHART / "README.md", ROOT / "README.md"):
        assert published in page.read_text(encoding="utf-8"), page


def test_the_chart_packages_under_the_name_the_workflow_pushes(tmp_path: Path) -> None:
    result = helm("package", str(CHART), "--destination", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == [f"{CHART.name}-{VERSION}.tgz"]


def test_it_runs_on_version_tags_with_only_the_rights_it_needs() -> None:
    flow = workflow()
    assert flow[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key `on` as true
    assert flow["permissions"] == {}
    (job,) = flow["jobs"].values()
    assert job["permissions"] == {"contents": "read", "packages": "write", "id-token": "write"}


def test_every_action_is_pinned_to_a_commit() -> None:
    lines = [line.strip() for line in RELEASE.read_text().splitlines() if re.match(r"\s*(- )?uses:", line)]
    assert len(lines) == len([s for s in steps() if "uses" in s]) == 6
    for line in lines:
        assert re.fullmatch(r"(- )?uses: [\w.-]+/[\w.-]+@[0-9a-f]{40}  # v\d+\.\d+\.\d+", line), line


def test_it_builds_both_platforms_and_signs_what_it_pushed() -> None:
    build = step("image")
    assert build["uses"].startswith("docker/build-push-action@")
    assert build["with"]["platforms"] == "linux/amd64,linux/arm64"
    assert build["with"]["push"] is True
    assert build["with"]["tags"] == "${{ env.IMAGE }}:${{ steps.version.outputs.version }}"
    (sign,) = [s for s in steps() if s.get("name") == "Sign the image"]
    assert sign["env"] == {"DIGEST": "${{ steps.image.outputs.digest }}"}
    assert sign["run"] == 'cosign sign --yes "$IMAGE@$DIGEST"'
    (chart,) = [s for s in steps() if s.get("name") == "Package, push and sign the chart"]
    assert 'helm push "$chart" "$CHART_REGISTRY"' in chart["run"]
    assert 'cosign sign --yes "${CHART_REGISTRY#oci://}/$(basename "$CHART")@$digest"' in chart["run"]


def run_version_check(tag: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    output = tmp_path / "github-output"
    output.write_text("")
    env = {"TAG": tag, "CHART": workflow()["env"]["CHART"], "GITHUB_OUTPUT": str(output), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step("version")["run"]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return result, output.read_text()


def test_the_version_check_passes_on_this_trees_tag(tmp_path: Path) -> None:
    result, output = run_version_check(f"v{VERSION}", tmp_path)
    assert (result.returncode, result.stdout, output) == (0, "", f"version={VERSION}\n"), result.stderr


@pytest.mark.parametrize("tag", ["v99.1.0", f"v{VERSION}-rc1"])
def test_the_version_check_names_every_file_a_tag_disagrees_with(tmp_path: Path, tag: str) -> None:
    result, output = run_version_check(tag, tmp_path)
    assert result.returncode == 1
    assert output == ""
    said = tag[1:]
    chart = "file=charts/llm-inference-exporter/Chart.yaml::Chart.yaml"
    assert result.stdout.splitlines() == [
        f"::error {chart} version is '{VERSION}', the tag says {said}",
        f"::error {chart} appVersion is '{VERSION}', the tag says {said}",
        f"::error file=exporter/__init__.py::exporter.__version__ is '{VERSION}', the tag says {said}",
        f"::error file=deploy/base/kustomization.yaml::deploy/base image tag is '{VERSION}', the tag says {said}",
    ]


def test_the_version_check_refuses_a_tag_that_is_no_version(tmp_path: Path) -> None:
    result, output = run_version_check("vnext", tmp_path)
    assert (result.returncode, result.stdout, output) == (1, "::error::tag vnext is not v<semver>\n", "")
