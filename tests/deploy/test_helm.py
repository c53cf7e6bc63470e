"""The Helm chart, with the real helm: it lints, every rendering validates like the kustomize output, the
defaults render the very objects of deploy/base (and the two overlays' values files those of the
overlays), and each value does what values.yaml says."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest
import yaml

from exporter import __version__
from exporter.bundle import render as bundle
from tests.deploy import crd_schemas
from tests.deploy.helm import (
    CHART,
    CHECKSUM,
    helm,
    normalise_helm,
    normalise_kustomize,
    template,
)
from tests.deploy.manifests import BASE, IMAGE, OVERLAYS, Obj, container, find, pod_spec, render
from tests.deploy.test_render import K8S_VERSIONS

CI = CHART / "ci"
GRAFANA_RULES = "llm-inference-exporter-grafana-alert-rules"
GRAFANA_RULES_KEY = "llm-inference-alert-rules.json"
VALUES = {"default": (), **{p.name.removesuffix("-values.yaml"): (p,) for p in sorted(CI.glob("*-values.yaml"))}}


def validate(objs: list[Obj]) -> None:
    for obj in objs:
        if (obj["apiVersion"], obj["kind"]) in crd_schemas.SCHEMAS:
            crd_schemas.validate(obj)
        else:
            for version in K8S_VERSIONS:
                kubernetes_validate.validate(obj, version, strict=True)


def diff(expected: dict[tuple[str, str], Obj], got: dict[tuple[str, str], Obj]) -> list[str]:
    """What differs, named per object, so a failure says which field of which object moved."""
    out = [f"only in kustomize: {k}" for k in sorted(set(expected) - set(got))]
    out += [f"only in the chart: {k}" for k in sorted(set(got) - set(expected))]
    for key in sorted(set(expected) & set(got)):
        if expected[key] != got[key]:
            a = json.dumps(expected[key], sort_keys=True, indent=1)
            b = json.dumps(got[key], sort_keys=True, indent=1)
            out.append(f"{key} differs:\nkustomize: {a}\nchart: {b}")
    return out


def test_helm_lint_passes_with_every_values_file() -> None:
    for name, files in VALUES.items():
        args = ["lint", "--strict", str(CHART)] + [a for f in files for a in ("--values", str(f))]
        result = helm(*args)
        assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}"


def test_helm_lint_fails_on_a_broken_template(tmp_path: Any) -> None:
    """The lint step can fail: a chart with an unclosed action is rejected."""
    broken = tmp_path / "chart"
    broken.mkdir()
    (broken / "Chart.yaml").write_text((CHART / "Chart.yaml").read_text())
    (broken / "templates").mkdir()
    (broken / "templates" / "x.yaml").write_text("kind: ConfigMap\nmetadata:\n  name: {{ .Release.Name\n")
    assert helm("lint", "--strict", str(broken)).returncode != 0


@pytest.mark.parametrize("name", VALUES)
def test_every_rendering_validates_against_the_schemas(name: str) -> None:
    validate(template(*VALUES[name]))


def test_the_defaults_render_the_kustomize_base() -> None:
    """Same objects, same fields: only Helm's bookkeeping labels, the config checksum that stands in for
    the generated ConfigMap's hashed name, and the Namespace (Helm installs into the release namespace;
    namespace.create renders it, tested below) set them apart."""
    expected = normalise_kustomize(render(BASE))
    namespace = expected.pop(("Namespace", "llm-exporter"))
    assert diff(expected, normalise_helm(template())) == []
    created = normalise_helm(template(sets=("namespace.create=true",)))
    assert created[("Namespace", "llm-exporter")] == namespace


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_the_overlay_values_render_the_overlay(overlay: str) -> None:
    expected = normalise_kustomize(render(OVERLAYS[overlay]))
    expected.pop(("Namespace", "llm-exporter"))
    assert diff(expected, normalise_helm(template(CI / f"{overlay}-values.yaml"))) == []


def test_the_comparison_notices_a_changed_value() -> None:
    """The normalisation drops nothing that matters: a changed resource limit is a difference."""
    expected = normalise_kustomize(render(BASE))
    expected.pop(("Namespace", "llm-exporter"))
    changed = diff(expected, normalise_helm(template(sets=("cluster.resources.limits.memory=2Gi",))))
    assert len(changed) == 1 and "('Deployment', 'llm-exporter-cluster') differs" in changed[0]


def test_the_rules_and_dashboards_are_the_generated_files() -> None:
    """No second copy: the chart's files are written by the bundle renderer and drift-checked with it."""
    generated = bundle.outputs()
    objs = template()
    rule = find(objs, "PrometheusRule", "llm-inference-exporter")
    assert rule["spec"] == yaml.safe_load(generated["alerts/llm-exporter.rules.yaml"])
    dashboards = find(objs, "ConfigMap", "llm-inference-exporter-dashboards")["data"]
    assert dashboards == {
        f"llm-inference-{rel.removeprefix('dashboards/')}": text
        for rel, text in generated.items()
        if rel.startswith("dashboards/") and rel.endswith(".json")
    }
    assert {rel for rel in generated if rel.startswith(bundle.CHART_FILES)} == {
        str(p.relative_to(bundle.ROOT)) for p in (CHART / "files").rglob("*") if p.is_file()
    }


def test_chart_and_image_versions_are_the_release() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == __version__
    for workload in (o for o in template() if o["kind"] in ("DaemonSet", "Deployment")):
        assert container(workload)["image"] == f"{IMAGE}:{__version__}"


def test_custom_values_take_effect() -> None:
    objs = template(CI / "custom-values.yaml")
    assert {o["kind"] for o in objs if "cluster" in o["metadata"]["name"]} == set()  # the role is off
    node = find(objs, "DaemonSet", "gpu-exporter-node")
    spec, c = pod_spec(node), container(node)
    assert c["image"] == "registry.example.com/mirror/llm-exporter:0.1.0-rc1"
    assert c["imagePullPolicy"] == "Always" and spec["imagePullSecrets"] == [{"name": "mirror-pull"}]
    assert "runtimeClassName" not in spec
    assert spec["nodeSelector"] == {"accelerator": "h100"}
    assert spec["tolerations"][0]["key"] == "dedicated"
    assert spec["priorityClassName"] == "system-node-critical"
    assert c["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}
    assert node["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 1
    # web config: the Secret mounted and named on the command line; probes and monitor speak TLS
    assert c["args"][-2:] == ["--web.config.file", "/etc/llm-exporter-web/web-config.yml"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["web-config"]["secret"] == {"secretName": "llm-exporter-web"}
    assert {"name": "web-config", "mountPath": "/etc/llm-exporter-web", "readOnly": True} in c["volumeMounts"]
    assert c["livenessProbe"]["httpGet"]["scheme"] == c["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    monitor = find(objs, "PodMonitor", "gpu-exporter-node")
    endpoint = monitor["spec"]["podMetricsEndpoints"][0]
    assert endpoint["scheme"] == "https" and endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    assert endpoint["relabelings"] == [{"action": "replace", "targetLabel": "cluster", "replacement": "prod-eu-1"}]
    assert endpoint["honorLabels"] is True
    assert monitor["metadata"]["labels"]["prometheus"] == "platform"
    rule = find(objs, "PrometheusRule", "llm-inference-exporter")
    assert rule["metadata"]["labels"]["prometheus"] == "platform"
    links = {r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}
    assert {link.split("#")[0] for link in links} == {"https://runbooks.example.com/llm-exporter/runbook.md"}
    assert find(objs, "ConfigMap", "llm-inference-exporter-dashboards")["metadata"]["labels"]["grafana_folder"] == "LLM"
    grafana = find(objs, "ConfigMap", GRAFANA_RULES)
    assert grafana["metadata"]["labels"]["grafana_alert"] == "llm"
    assert grafana["data"] == {
        GRAFANA_RULES_KEY: bundle.out_files(
            bundle.ROOT, "https://runbooks.example.com/llm-exporter/runbook.md", None, "P1809F7CD0C75ACF3"
        )["grafana-alert-rules.json"]
    }
    binding = find(objs, "ClusterRoleBinding", "gpu-exporter-node")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpu-exporter-node", "namespace": "llm-exporter"}]
    assert all(o["metadata"]["labels"]["team"] == "ml-platform" for o in objs)
    namespace = find(objs, "Namespace", "llm-exporter")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_a_config_change_rolls_the_pods() -> None:
    def checksum(*sets: str) -> str:
        value: str = find(template(sets=sets), "DaemonSet", "llm-exporter-node")["spec"]["template"]["metadata"][
            "annotations"
        ][CHECKSUM]
        return value

    assert checksum() != checksum("node.config.engines.timeout_seconds=5")


def test_gpu_prices_reach_the_cluster_config(tmp_path: Any) -> None:
    from exporter import config

    values = tmp_path / "prices.yaml"
    values.write_text(yaml.safe_dump({"cost": {"currency": "USD", "gpuHourPrices": {"NVIDIA H100 80GB HBM3": 3.6}}}))

    def cluster(objs: list[Obj]) -> tuple[config.Config, str]:
        text = find(objs, "ConfigMap", "llm-exporter-cluster-config")["data"]["config.yaml"]
        pod = find(objs, "Deployment", "llm-exporter-cluster")["spec"]["template"]["metadata"]
        return config.parse(text), pod["annotations"][CHECKSUM]

    priced, priced_sum = cluster(template(values))
    assert priced.cost == config.Cost(gpu_hour_prices={"NVIDIA H100 80GB HBM3": 3.6}, currency="USD")
    plain, plain_sum = cluster(template())
    assert plain.cost == config.Cost() and plain_sum != priced_sum  # no price shipped; a price change rolls the pod
    node = find(template(values), "ConfigMap", "llm-exporter-node-config")["data"]["config.yaml"]
    assert config.parse(node).cost == config.Cost()  # the node role exports no price


@pytest.mark.parametrize(
    ("sets", "url", "label", "uid"),
    [
        ((), None, None, "prometheus"),
        (("grafanaAlertRules.datasourceUid=P1809F7CD0C75ACF3",), None, None, "P1809F7CD0C75ACF3"),
        (
            ("grafanaAlertRules.datasourceUid=abc", "clusterLabel=region",
             "prometheusRule.runbookUrl=https://runbooks.example.com/llm.md"),
            "https://runbooks.example.com/llm.md", "region", "abc",
        ),
    ],
)  # fmt: skip
def test_grafana_alert_rules_are_what_render_out_writes(
    sets: tuple[str, ...], url: str | None, label: str | None, uid: str
) -> None:
    """The ConfigMap holds `render --out DIR --datasource-uid UID`'s grafana-alert-rules.json for the same options."""
    assert GRAFANA_RULES not in {o["metadata"]["name"] for o in template(sets=sets)}  # off by default
    objs = template(sets=("grafanaAlertRules.enabled=true", *sets))
    validate(objs)
    configmap = find(objs, "ConfigMap", GRAFANA_RULES)
    expected = bundle.out_files(bundle.ROOT, url, label, uid)["grafana-alert-rules.json"]
    assert configmap["data"] == {GRAFANA_RULES_KEY: expected}
    assert configmap["metadata"]["labels"]["grafana_alert"] == "1"
    assert f'"datasourceUid": "{uid}"' in expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("grafanaAlertRules.datasourceUid=prometheus.main",
         'grafanaAlertRules.datasourceUid must be a Grafana data source uid (1 to 40 letters, digits, - and _), '
         'got "prometheus.main"'),
        ("grafanaAlertRules.datasourceUid=" + "x" * 41, "datasourceUid must be a Grafana data source uid (1 to 40"),
        ('prometheusRule.runbookUrl=https://runbooks.example.com/"llm".md',
         'grafanaAlertRules: prometheusRule.runbookUrl must be printable ASCII without " or \\ (percent-encode the '
         'rest), got "https://runbooks.example.com/\\"llm\\".md"'),
    ],
)  # fmt: skip
def test_a_grafana_alert_rules_value_grafana_would_not_take_fails(value: str, message: str) -> None:
    result = helm("template", "x", str(CHART), "--set", "grafanaAlertRules.enabled=true", "--set", value)
    assert result.returncode == 1
    assert message in result.stderr
