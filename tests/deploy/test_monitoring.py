"""How Prometheus finds the exporter in each flavour — monitors, overlay labels, the plain scrape job (checked
by promtool) — and the KEDA example: a query on catalogue names that fails loudly instead of reading 0."""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from alerts.thresholds import EXPORTER_JOB
from exporter import config, server
from exporter.catalogue import BY_NAME, engine
from exporter.check.inputs import file_queries
from exporter.collect import CollectorSet
from exporter.exposition import Family
from exporter.promql import selectors as promql
from tests.bundle import servers
from tests.deploy import crd_schemas
from tests.deploy.manifests import BASE, DEPLOY, OVERLAYS, ROOT, Obj, container, find, matches, render
from tests.peers import peer

PLAIN = OVERLAYS["plain-prometheus"]
KPS = OVERLAYS["kube-prometheus-stack"]
KEDA = DEPLOY / "examples" / "keda-scaledobject.yaml"
SCRAPE_EXAMPLE = PLAIN / "scrape-config.example.yaml"
OPERATOR_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}


def seconds(duration: str) -> float:
    factors = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.fullmatch(r"(\d+)(ms|s|m|h)", duration)
    assert parts, duration
    return int(parts[1]) * factors[parts[2]]


def engine_timeout() -> float:
    text = (BASE / "config" / "node.yaml").read_text(encoding="utf-8")
    return config.parse(text).engines.timeout_seconds


def monitors(objs: list[Obj]) -> list[tuple[Obj, Obj, list[Obj]]]:
    """(monitor, the workload it scrapes, its endpoints) for the ServiceMonitor and the PodMonitor."""
    service_monitor = find(objs, "ServiceMonitor", "llm-exporter-cluster")
    service = find(objs, "Service", "llm-exporter-cluster")
    assert matches(service_monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    deployment = find(objs, "Deployment", "llm-exporter-cluster")
    assert matches(service["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"])
    pod_monitor = find(objs, "PodMonitor", "llm-exporter-node")
    daemonset = find(objs, "DaemonSet", "llm-exporter-node")
    assert matches(pod_monitor["spec"]["selector"]["matchLabels"], daemonset["spec"]["template"]["metadata"]["labels"])
    return [
        (service_monitor, deployment, service_monitor["spec"]["endpoints"]),
        (pod_monitor, daemonset, pod_monitor["spec"]["podMetricsEndpoints"]),
    ]


def test_monitors_keep_the_engines_labels_and_scrape_the_metrics_port() -> None:
    objs = render(BASE)
    for monitor, workload, endpoints in monitors(objs):
        assert len(endpoints) == 1, monitor["metadata"]["name"]
        endpoint = endpoints[0]
        assert endpoint["honorLabels"] is True
        assert endpoint["port"] == container(workload)["ports"][0]["name"] == "metrics"
        assert endpoint["path"] == "/metrics"
        # Above the per-engine timeout, so one slow engine is cut off and reported, not the whole scrape.
        assert engine_timeout() < seconds(endpoint["scrapeTimeout"]) < seconds(endpoint["interval"])


def test_both_roles_are_scraped_as_the_job_the_alerts_expect() -> None:
    objs = render(BASE)
    rule = find(objs, "PrometheusRule", "llm-inference-exporter")
    down = next(r for g in rule["spec"]["groups"] for r in g["rules"] if r.get("alert") == "LLMExporterDown")
    assert f'job="{EXPORTER_JOB}"' in down["expr"]
    service = find(objs, "Service", "llm-exporter-cluster")
    for monitor, workload, _ in monitors(objs):
        job_label = monitor["spec"]["jobLabel"]  # job = the value of this label on the Service / the pod
        source = service if monitor["kind"] == "ServiceMonitor" else workload["spec"]["template"]
        assert source["metadata"]["labels"][job_label] == EXPORTER_JOB


def test_services_target_the_named_metrics_port() -> None:
    objs = render(BASE)
    for name in ("llm-exporter-node", "llm-exporter-cluster"):
        service = find(objs, "Service", name)
        workload = find(objs, "DaemonSet" if name.endswith("node") else "Deployment", name)
        assert service["spec"]["ports"] == [
            {"name": "metrics", "port": container(workload)["ports"][0]["containerPort"], "targetPort": "metrics",
             "protocol": "TCP"}
        ]  # fmt: skip
    assert find(objs, "Service", "llm-exporter-node")["spec"]["clusterIP"] == "None"


def test_kube_prometheus_stack_overlay_labels_what_its_prometheus_selects() -> None:
    objs = render(KPS)
    selected = [o for o in objs if o["kind"] in OPERATOR_KINDS]
    assert {o["kind"] for o in selected} == OPERATOR_KINDS
    for obj in selected:
        assert obj["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    others = [o for o in objs if o["kind"] not in OPERATOR_KINDS]
    assert all("release" not in o["metadata"].get("labels", {}) for o in others)
    assert len(objs) == len(render(BASE))


def test_plain_prometheus_overlay_needs_no_operator_crds() -> None:
    objs = render(PLAIN)
    assert not [o for o in objs if o["apiVersion"].startswith("monitoring.coreos.com/")]
    base = {(o["kind"], o["metadata"]["name"]) for o in render(BASE) if o["kind"] not in OPERATOR_KINDS}
    assert {(o["kind"], o["metadata"]["name"]) for o in objs} == base
    for kind, name in (("DaemonSet", "llm-exporter-node"), ("Deployment", "llm-exporter-cluster")):
        workload = find(objs, kind, name)
        annotations = workload["spec"]["template"]["metadata"]["annotations"]
        port = container(workload)["ports"][0]["containerPort"]
        assert annotations == {"prometheus.io/scrape": "true", "prometheus.io/port": str(port),
                               "prometheus.io/path": "/metrics"}  # fmt: skip


def promtool() -> str:
    return peer("promtool")


class EngineSeries:
    """What a node exporter exposes for one engine: a series with the engine pod's namespace and pod."""

    name = "engines"

    def collect(self) -> list[Family]:
        waiting = Family(engine.REQUESTS_WAITING)
        waiting.add(("inference", "vllm-0", "vllm", "llama-3-8b", "0"), 7)
        return [waiting]


def _sd_name(key: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", key)


def pod_sd_labels(port: int) -> dict[str, str]:
    """The meta labels Prometheus' Kubernetes pod discovery gives a node exporter pod's metrics port."""
    daemonset = find(render(PLAIN), "DaemonSet", "llm-exporter-node")
    template = daemonset["spec"]["template"]["metadata"]
    annotations = {**template["annotations"], "prometheus.io/port": str(port)}
    labels = {f"__meta_kubernetes_pod_annotation_{_sd_name(k)}": v for k, v in annotations.items()}
    labels |= {f"__meta_kubernetes_pod_label_{_sd_name(k)}": v for k, v in template["labels"].items()}
    return labels | {
        "__meta_kubernetes_namespace": daemonset["metadata"]["namespace"],
        "__meta_kubernetes_pod_name": "llm-exporter-node-x7k2p",
        "__meta_kubernetes_pod_node_name": "gpu-node-1",
        "__meta_kubernetes_pod_container_port_name": container(daemonset)["ports"][0]["name"],
    }


def test_the_plain_scrape_job_keeps_the_engine_labels_in_a_real_prometheus(tmp_path: Path) -> None:
    """The example job, run by Prometheus against a live exporter, with a file_sd target carrying the meta
    labels pod discovery would set (tests/scrape runs the same job with its kubernetes_sd against a real API
    server); every relabelling rule and honor_labels run as written (only the interval is shortened)."""
    jobs = yaml.safe_load(SCRAPE_EXAMPLE.read_text(encoding="utf-8"))
    assert [j["job_name"] for j in jobs] == [EXPORTER_JOB]
    job = jobs[0]
    assert job["honor_labels"] is True
    assert engine_timeout() < seconds(job["scrape_timeout"]) <= seconds(job["scrape_interval"])
    assert job.pop("kubernetes_sd_configs") == [{"role": "pod", "namespaces": {"names": ["llm-exporter"]}}]
    exporter = server.ExporterServer(("127.0.0.1", 0), server.Scraper(CollectorSet([EngineSeries()]), "node"))
    threading.Thread(target=exporter.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        port = int(exporter.server_address[1])
        targets = tmp_path / "targets.yaml"
        # Discovery lists the pod's address; the relabelling replaces its port with the annotation's.
        targets.write_text(yaml.safe_dump([{"targets": ["127.0.0.1:9"], "labels": pod_sd_labels(port)}]))
        job |= {"file_sd_configs": [{"files": [str(targets)]}], "scrape_interval": "1s", "scrape_timeout": "1s"}
        rules = ROOT / "alerts" / "llm-exporter.rules.yaml"
        with servers.prometheus(tmp_path / "prom", [job], rule_files=[rules]) as url:
            servers.wait_for(lambda: bool(servers.query(url, f'up{{job="{EXPORTER_JOB}"}} == 1')), 30, "a scrape")
            (engine_series,) = servers.query(url, "llm_requests_waiting")
            (build,) = servers.query(url, "llm_exporter_build_info")
    finally:
        exporter.shutdown()
        exporter.server_close()
    assert engine_series["metric"] == {
        "__name__": "llm_requests_waiting", "job": EXPORTER_JOB, "instance": f"127.0.0.1:{port}",
        "namespace": "inference", "pod": "vllm-0", "engine": "vllm", "model": "llama-3-8b", "dp_rank": "0",
    }  # fmt: skip
    assert engine_series["value"][1] == "7"
    # A series with no identity of its own gets the exporter pod's, and no node label.
    assert (build["metric"]["namespace"], build["metric"]["pod"]) == ("llm-exporter", "llm-exporter-node-x7k2p")
    assert "node" not in build["metric"]


@pytest.fixture
def scaled() -> Obj:
    docs = [d for d in yaml.safe_load_all(KEDA.read_text(encoding="utf-8")) if d]
    assert len(docs) == 1
    obj: Obj = docs[0]
    crd_schemas.validate(obj)
    return obj


def test_keda_keeps_warm_replicas_and_a_fallback(scaled: Obj) -> None:
    spec = scaled["spec"]
    assert spec["minReplicaCount"] == 2
    assert spec["maxReplicaCount"] > spec["minReplicaCount"]
    assert spec["cooldownPeriod"] == 600
    # cooldownPeriod only governs scaling to zero; between N and minReplicaCount the HPA's window does.
    scale_down = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    assert scale_down["stabilizationWindowSeconds"] == 600
    fallback = spec["fallback"]
    assert fallback["failureThreshold"] >= 1
    assert spec["minReplicaCount"] <= fallback["replicas"] <= spec["maxReplicaCount"]
    assert fallback["behavior"] == "currentReplicasIfHigher"
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger.get("metricType", "AverageValue") == "AverageValue"  # fallback works only for AverageValue
    assert trigger["metadata"]["ignoreNullValues"] == "false"
    assert float(trigger["metadata"]["threshold"]) > 0


def test_keda_hpa_behavior_is_a_valid_hpa_behavior(scaled: Obj) -> None:
    import kubernetes_validate

    behavior = scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "keda-hpa-check"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "minReplicas": 2,
                 "maxReplicas": 8, "behavior": behavior},
    }  # fmt: skip
    kubernetes_validate.validate(hpa, "1.34.0", strict=True)


def test_keda_query_sums_the_canonical_queue_gauge_for_one_model(scaled: Obj) -> None:
    (query,) = file_queries(KEDA)
    assert query.where == f"ScaledObject {scaled['metadata']['name']} trigger 0"
    assert query.expr.startswith("sum(") and query.expr.endswith(")")
    (selector,) = promql.selectors(query.expr)
    spec = BY_NAME[selector.name]
    assert (spec.name, spec.type) == ("llm_requests_waiting", "gauge")
    assert {(m.label, m.op) for m in selector.matchers} == {("namespace", "="), ("model", "=")}
    assert {m.label for m in selector.matchers} <= set(spec.labels)
    namespace = next(m.value for m in selector.matchers if m.label == "namespace")
    assert namespace == scaled["metadata"]["namespace"]  # the model's own namespace, not the exporter's


def test_keda_query_parses_in_prometheus(scaled: Obj, tmp_path: Path) -> None:
    query = scaled["spec"]["triggers"][0]["metadata"]["query"]
    rules = tmp_path / "keda.rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "keda", "rules": [{"record": "keda:query", "expr": query}]}]}))
    result = subprocess.run(
        [promtool(), "check", "rules", str(rules)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
