"""Every kustomization renders with `kubectl kustomize` and every object validates offline: built-in kinds
against the Kubernetes OpenAPI schemas (kubernetes-validate, strict: unknown fields are errors), custom
resources against the CRD-derived schemas in crd_schemas.py."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from exporter import __version__
from tests.deploy import crd_schemas
from tests.deploy.manifests import BASE, IMAGE, KUSTOMIZATIONS, OVERLAYS, ROOT, container, find, render

# 1.34: the first release with resource.k8s.io/v1 (DRA GA), which the cluster role's RBAC names.
K8S_VERSIONS = ("1.34.0", kubernetes_validate.latest_version())
IDS = [str(p.relative_to(ROOT)) for p in KUSTOMIZATIONS]


def test_the_layout_is_a_base_and_two_overlays() -> None:
    assert BASE in KUSTOMIZATIONS
    assert set(OVERLAYS) == {"kube-prometheus-stack", "plain-prometheus"}


def test_the_base_includes_the_generated_rules_and_dashboard() -> None:
    objs = render(BASE)
    rule = find(objs, "PrometheusRule", "llm-inference-exporter")
    assert {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r} >= {
        "LLMExporterDown",
        "LLMMetricMissing",
        "LLMPodPendingWithFreeGPUs",
    }
    dashboards = find(objs, "ConfigMap", "llm-inference-exporter-dashboards")
    assert dashboards["metadata"]["labels"]["grafana_dashboard"] == "1"  # the Grafana sidecar's default label
    assert any(key.endswith(".json") for key in dashboards["data"])


@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=IDS)
def test_every_object_lives_in_the_exporter_namespace(path: Any) -> None:
    objs = render(path)
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for obj in objs:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in obj["metadata"], where
        else:
            assert obj["metadata"].get("namespace") == "llm-exporter", where
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "llm-inference-exporter", where


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=IDS)
def test_builtin_kinds_validate_against_the_kubernetes_schemas(path: Any, version: str) -> None:
    checked = set()
    for obj in render(path):
        if (obj["apiVersion"], obj["kind"]) in crd_schemas.SCHEMAS:
            continue
        kubernetes_validate.validate(obj, version, strict=True)
        checked.add(obj["kind"])
    assert {"DaemonSet", "Deployment", "ClusterRole", "ClusterRoleBinding", "Service", "ConfigMap"} <= checked


@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=IDS)
def test_custom_resources_validate_against_their_crds(path: Any) -> None:
    for obj in render(path):
        if (obj["apiVersion"], obj["kind"]) in crd_schemas.SCHEMAS:
            crd_schemas.validate(obj)


def test_every_kind_rendered_has_a_schema() -> None:
    """A new custom kind in deploy/ must get a schema here rather than pass unvalidated."""
    for path in KUSTOMIZATIONS:
        for obj in render(path):
            if (obj["apiVersion"], obj["kind"]) in crd_schemas.SCHEMAS:
                continue
            with pytest.raises(kubernetes_validate.ValidationError):  # has a schema: an unknown field fails
                kubernetes_validate.validate({**obj, "bogusField": 1}, K8S_VERSIONS[0], strict=True)


def test_the_validators_reject_a_misspelt_field() -> None:
    daemonset = find(render(BASE), "DaemonSet", "llm-exporter-node")
    broken = copy.deepcopy(daemonset)
    container(broken)["livenessprobe"] = container(broken).pop("livenessProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSIONS[0], strict=True)

    monitor = find(render(BASE), "PodMonitor", "llm-exporter-node")
    monitor["spec"]["podMetricsEndpoints"][0]["honorlabels"] = True
    with pytest.raises(jsonschema.ValidationError):
        crd_schemas.validate(monitor)


@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=IDS)
def test_images_are_the_pinned_release(path: Any) -> None:
    workloads = [o for o in render(path) if o["kind"] in ("DaemonSet", "Deployment")]
    assert len(workloads) == 2
    for workload in workloads:
        for c in workload["spec"]["template"]["spec"]["containers"]:
            assert c["image"] == f"{IMAGE}:{__version__}"
