"""The dashboards as PersesDashboard resources where the Perses operator runs: the chart's
dashboards.perses (off by default) and the kustomize example deploy/examples/perses render the generated
Perses spec (exporter/bundle/perses.py) unchanged, valid against the perses-operator CRD, for one cluster or
many, as v1alpha1 or v1alpha2."""

from __future__ import annotations

from typing import Any

import yaml

from exporter.bundle import render as bundle
from tests.deploy import crd_schemas
from tests.deploy.helm import CHART, NAMESPACE, helm, template
from tests.deploy.manifests import ROOT, find, render

GENERATED = bundle.outputs()
SPEC = yaml.safe_load(GENERATED["dashboards/overview.perses.yaml"])["spec"]
NAME = "llm-inference-overview"


def dashboards(*sets: str) -> list[dict[str, Any]]:
    return [o for o in template(sets=sets) if o["kind"] == "PersesDashboard"]


def test_the_chart_renders_no_persesdashboard_by_default() -> None:
    assert dashboards() == []


def test_the_chart_renders_the_generated_spec_as_v1alpha1() -> None:
    (found,) = dashboards("dashboards.perses.enabled=true")
    assert (found["apiVersion"], found["metadata"]["name"], found["metadata"]["namespace"]) == (
        "perses.dev/v1alpha1",
        NAME,
        NAMESPACE,
    )
    assert found["spec"] == SPEC
    assert found["metadata"]["labels"]["app.kubernetes.io/part-of"] == "llm-inference-exporter"
    crd_schemas.validate(found)


def test_v1alpha2_holds_the_spec_under_config_beside_the_instance_selector() -> None:
    (found,) = dashboards(
        "dashboards.perses.enabled=true",
        "dashboards.perses.apiVersion=v1alpha2",
        "dashboards.perses.namespace=perses-dev",
        "dashboards.perses.instanceSelector.matchLabels.app=perses",
    )
    assert (found["apiVersion"], found["metadata"]["namespace"]) == ("perses.dev/v1alpha2", "perses-dev")
    assert found["spec"] == {"config": SPEC, "instanceSelector": {"matchLabels": {"app": "perses"}}}
    crd_schemas.validate(found)


def test_with_a_cluster_label_it_is_what_render_out_perses_writes() -> None:
    (found,) = dashboards("dashboards.perses.enabled=true", "clusterLabel=region")
    rendered = bundle.out_files(bundle.ROOT, None, "region", None, with_perses=True)
    assert found["spec"] == yaml.safe_load(rendered[f"{NAME}.perses.yaml"])["spec"]
    assert found["spec"]["variables"][0]["spec"]["name"] == "cluster"
    assert 'region=~"$cluster"' in yaml.safe_dump(found["spec"])
    crd_schemas.validate(found)


def test_an_api_version_the_operator_does_not_serve_fails() -> None:
    result = helm(
        "template", "x", str(CHART), "--set", "dashboards.perses.enabled=true",
        "--set", "dashboards.perses.apiVersion=v1beta1",
    )  # fmt: skip
    assert result.returncode == 1
    assert 'dashboards.perses.apiVersion must be v1alpha1 or v1alpha2, got "v1beta1"' in result.stderr


def test_the_kustomize_example_adds_the_persesdashboard_to_the_base() -> None:
    objs = render(ROOT / "deploy" / "examples" / "perses")
    found = find(objs, "PersesDashboard", NAME)
    assert (found["apiVersion"], found["metadata"]["namespace"]) == ("perses.dev/v1alpha1", "llm-exporter")
    assert found["spec"] == SPEC
    crd_schemas.validate(found)
    base = render(ROOT / "deploy" / "base")
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objs if o is not found) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in base
    )
