"""The PersesDashboards on a real kube-apiserver serving the published perses-operator CRD (v0.5.0): the
kustomize example's v1alpha1 and the chart's v1alpha2 pass its schema with strict field validation, and a
misspelt field fails (so the check can fail). Server-side dry runs: the CRD's own conversion webhook (the
operator's) is not running here, so nothing is stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.deploy.helm import template
from tests.deploy.manifests import DEPLOY, find, render
from tests.deploy_real.helpers import ensure
from tests.kubecluster import Cluster

NAME = "llm-inference-overview"


def dry_run(api: Cluster, tmp_path: Path, obj: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / "persesdashboard.yaml"
    path.write_text(json.dumps(obj), encoding="utf-8")
    args = ("apply", "--server-side", "--dry-run=server", "--field-manager=test", "-f", str(path))
    result = api.kubectl(*args, check=False)
    return result.returncode, result.stdout + result.stderr


def test_the_kustomize_example_passes_the_crd(crds: Cluster, tmp_path: Path) -> None:
    ensure(crds, "Namespace", "llm-exporter")
    found = find(render(DEPLOY / "examples" / "perses"), "PersesDashboard", NAME)
    # the upstream CRD serves v1alpha1 with a deprecation warning (the Cluster Observability Operator's serves it)
    assert dry_run(crds, tmp_path, found) == (
        0,
        f"persesdashboard.perses.dev/{NAME} serverside-applied (server dry run)\n"
        "Warning: perses.dev/v1alpha1 is deprecated; use perses.dev/v1alpha2\n",
    )


def test_the_charts_v1alpha2_passes_the_crd(crds: Cluster, tmp_path: Path) -> None:
    ensure(crds, "Namespace", "llm-exporter")
    objs = template(sets=("dashboards.perses.enabled=true", "dashboards.perses.apiVersion=v1alpha2"))
    found = find(objs, "PersesDashboard", NAME)
    assert found["apiVersion"] == "perses.dev/v1alpha2"
    assert dry_run(crds, tmp_path, found) == (
        0,
        f"persesdashboard.perses.dev/{NAME} serverside-applied (server dry run)\n",
    )


def test_a_misspelt_field_is_rejected(crds: Cluster, tmp_path: Path) -> None:
    ensure(crds, "Namespace", "llm-exporter")
    found = find(render(DEPLOY / "examples" / "perses"), "PersesDashboard", NAME)
    found["spec"]["layout"] = found["spec"].pop("layouts")
    code, out = dry_run(crds, tmp_path, found)
    assert code != 0 and "layout" in out, out
