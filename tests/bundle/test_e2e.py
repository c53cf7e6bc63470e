"""End to end with real parts: Prometheus scrapes real `llm-exporter serve` processes, evaluates the generated
rules and sends to a real Alertmanager, whose webhook lands in this test; every dashboard query returns data;
`check` flags a query on a renamed vLLM metric.

Peers: a loopback server replaying the recorded vLLM 0.32.0 body (counters growing with each scrape, 7 requests
waiting) and one replaying the LiteLLM 1.110.2 body recorded in front of a server of the same model (its end users
are the tenants of the *Tenants* row) and one replaying an endpoint picker's v1.5.0 body (its flow control queue,
per fairness id, of a model `llama`), the node role scraping the three, on node gpu-0 (`NODE_NAME`, as the DaemonSet
sets it) with two GPUs from the stub libnvidia-ml.so.1 and one pod attributed through a pod-resources socket; the
cluster role against a real control plane (tests/kubecluster.py: kwok nodes, the real scheduler) with six free GPUs
spread 2/2/1/1 and a 4-GPU pod the scheduler leaves Pending. Prometheus adds no label: `node` on the GPU series
comes from the exporter. Rules are rendered from the same source with short `for`s.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from exporter.audit import measured
from exporter.audit.cli import run as audit
from exporter.bundle import render
from exporter.check.evaluate import Checker
from exporter.check.inputs import Query, file_queries
from exporter.cli import parser
from exporter.demo.vllm_env import free_port
from exporter.sources.prometheus import HttpPrometheus
from tests.bundle.engine_workload import deploy_engine
from tests.bundle.replay import ReplayedEpp, ReplayedLitellm, ReplayedVllm, delivered, fast_rules, node_config
from tests.bundle.servers import Served, alertmanager, prometheus, query, serve_exporter, static_job, wait_for
from tests.bundle.servers import wait_http as wait_ready
from tests.kube.objects import pod
from tests.kubecluster import Cluster, start_cluster
from tests.kubecluster import wait_for as wait_until
from tests.scrape.node_gpus import STUB_UUID, gpu_node

pytestmark = pytest.mark.slow
# the cluster role priced as a user sets it (cost.gpu_hour_prices), for the stub NVML's GPU models
PRICES = {"cost": {"gpu_hour_prices": {"NVIDIA H100 80GB HBM3": 3.6, "NVIDIA A100-SXM4-80GB": 2.0}, "currency": "USD"}}


def two_two_one_one(cluster: Cluster) -> None:
    for ns in ("batch", "demo"):
        cluster.must("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        account = f"/api/v1/namespaces/{ns}/serviceaccounts/default"  # pods are admitted once it exists

        def has_account(path: str = account) -> bool:
            return cluster.request("GET", path)[0] == 200

        wait_until(has_account, 60, f"default ServiceAccount in {ns}")
    for i, used in enumerate((6, 6, 7, 7)):  # four 8-GPU nodes: 2/2/1/1 free
        cluster.add_node(f"gpu-{i}", capacity={"nvidia.com/gpu": "8"})
        train = pod(f"train-{i}", used, namespace="batch", node=f"gpu-{i}")
        cluster.must("POST", "/api/v1/namespaces/batch/pods", train)
    # 6 free, but no node holds 4: the scheduler leaves it Unschedulable
    cluster.must("POST", "/api/v1/namespaces/demo/pods", pod("vllm-big-0", 4, namespace="demo"))


def serve(
    tmp: Path, name: str, role: str, config: dict[str, Any], kubeconfig: str = "", env: dict[str, str] | None = None
) -> Any:
    return serve_exporter(tmp, name, role, f"127.0.0.1:{free_port()}", config, kubeconfig, env)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("e2e")
    engine, gateway, epp, webhook = ReplayedVllm(), ReplayedLitellm(), ReplayedEpp(), Served()
    rules = fast_rules(tmp / "rules.yaml")
    node_cfg = node_config(engine, gateway, epp)
    assigned = {("demo", "vllm-0", "vllm"): [STUB_UUID.format(0)]}
    try:
        with ExitStack() as stack:
            cluster = stack.enter_context(start_cluster(tmp / "kube"))
            two_two_one_one(cluster)
            gpus = stack.enter_context(gpu_node(tmp, "gpu-0", assigned))
            # the node role's pod watch (GPU memory per pod) on the same API server
            node_cfg_gpu = node_cfg | {"gpu": gpus.gpu}
            node_proc, node_url = serve(tmp, "node", "node", node_cfg_gpu, str(cluster.admin_kubeconfig), gpus.env)
            cluster_proc, cluster_url = serve(tmp, "cluster", "cluster", PRICES, str(cluster.admin_kubeconfig))
            np, cp = stack.enter_context(node_proc), stack.enter_context(cluster_proc)
            wait_ready(f"{node_url}/readyz", proc=np)
            wait_ready(f"{cluster_url}/readyz", timeout=60, proc=cp)
            scrape = [
                static_job("llm-exporter", [node_url]),
                static_job("llm-exporter-cluster", [cluster_url])
                | {"relabel_configs": [{"target_label": "job", "replacement": "llm-exporter"}]},
                static_job("vllm", [engine.url]),  # users who scrape vLLM directly, for the rename check
            ]
            am_url = stack.enter_context(alertmanager(tmp / "am", f"{webhook.url}/hook"))
            prom_url = stack.enter_context(
                prometheus(tmp / "prom", scrape, rule_files=[rules], alertmanager_url=am_url)
            )
            deploy_engine(cluster, prom_url)  # the replica and route panels
            yield {"prometheus": prom_url, "webhook": webhook, "tmp": tmp, "kubeconfig": str(cluster.admin_kubeconfig)}
    finally:
        for server in (engine, gateway, epp, webhook):
            server.close()


def test_alerts_reach_the_webhook_through_alertmanager(stack: dict[str, Any]) -> None:
    webhook = stack["webhook"]
    wanted = {"LLMRequestQueueBacklog", "LLMPodPendingWithFreeGPUs"}
    wait_for(lambda: wanted <= set(delivered(webhook)), 60, f"{wanted} at the webhook")
    alerts = delivered(webhook)
    backlog = alerts["LLMRequestQueueBacklog"]
    assert backlog["status"] == "firing"
    assert backlog["labels"] == {
        "alertname": "LLMRequestQueueBacklog",
        "severity": "warning",
        "namespace": "demo",
        "model": "tiny",
    }
    assert backlog["annotations"]["summary"] == "7 requests are queued for demo/tiny."
    assert backlog["annotations"]["runbook_url"] == "docs/runbook.md#llmrequestqueuebacklog"
    pending = alerts["LLMPodPendingWithFreeGPUs"]["labels"]
    assert (pending["pod"], pending["reason"], pending["resource"]) == ("vllm-big-0", "fragmented", "nvidia.com/gpu")
    assert not {"LLMExporterDown", "LLMEngineDown", "LLMMetricMissing"} & set(alerts)


def test_every_dashboard_query_returns_data(stack: dict[str, Any]) -> None:
    prom = stack["prometheus"]
    # rates need two samples of every series, the GPU bandwidth two GPM samples
    wait_for(lambda: bool(query(prom, "rate(llm_prompt_tokens_total[5m]) > 0")), 60, "growing counters")
    wait_for(lambda: bool(query(prom, "llm_gpu_memory_bandwidth_utilization_ratio")), 60, "GPM bandwidth")
    checker = Checker(HttpPrometheus(prom))
    # the node filter set to the node the exporter runs on: GPU series carry `node` from $NODE_NAME
    queries = file_queries(render.ROOT / "dashboards/overview.json", {"node": "gpu-0"})
    assert len(queries) > 30
    failing: list[tuple[str, list[str]]] = []

    def all_ok() -> bool:
        # recording rules over rates need a few evaluations after the first scrapes
        failing[:] = [(r.query.where, r.reasons) for r in map(checker.check, queries) if r.status != "ok"]
        return not failing

    with contextlib.suppress(AssertionError):
        wait_for(all_ok, 30, "every dashboard query")
    assert failing == []
    # and the filter filters: another node (GPUs free in the cluster view, no exporter) shows none of gpu-0's GPUs
    other = file_queries(render.ROOT / "dashboards/overview.json", {"node": "gpu-1"})
    gpu_panels = [q for q in other if "llm_gpu_" in q.expr and 'node=~"gpu-1"' in q.expr]
    assert gpu_panels
    assert [q.where for q in gpu_panels if query(prom, q.expr)] == []


def test_the_gateways_tenants_share_the_gpu_of_the_model_they_asked_for(stack: dict[str, Any]) -> None:
    prom = stack["prometheus"]
    # the proxy's end users, through the exporter and the rules; the request without an end user is no tenant
    wait_for(lambda: bool(query(prom, "llm:tenant_cost_per_second")), 60, "the tenants' cost")
    rows = query(prom, "llm:tenant_cost_per_second")
    assert {(r["metric"]["tenant"], r["metric"]["model"], r["metric"]["currency"]) for r in rows} == {
        (t, "tiny", "USD") for t in ("ada", "alice", "bo", "bob")
    }
    # gateway model "tiny" joins the engine's served "tiny": together the tenants hold the model's GPU, and pay it
    (held,) = query(prom, 'sum(llm:tenant_gpus_allocated) / sum(llm:model_gpus_allocated{model="tiny"})')
    assert abs(float(held["value"][1]) - 1) < 1e-9
    (paid,) = query(prom, 'sum(llm:tenant_cost_per_second) / sum(llm:model_cost_per_second{model="tiny"})')
    assert abs(float(paid["value"][1]) - 1) < 1e-9


def test_check_flags_a_query_on_a_renamed_vllm_metric(stack: dict[str, Any]) -> None:
    checker = Checker(HttpPrometheus(stack["prometheus"]))
    wait_for(lambda: bool(query(stack["prometheus"], "vllm:kv_cache_usage_perc")), 30, "the direct vLLM scrape")
    old = checker.check(Query("keda.yaml", "ScaledObject vllm trigger 0", "avg(vllm:gpu_cache_usage_perc)"))
    assert old.status == "empty"
    # the diagnosis from vLLM's release history, with the running version the exporter reports
    assert old.reasons == [
        "vllm:gpu_cache_usage_perc: never present in the last 7d: vllm:gpu_cache_usage_perc was removed in vLLM "
        "0.12.0 (hidden behind --show-hidden-metrics-for-version from 0.11.0); its successor is "
        "vllm:kv_cache_usage_perc (stable name llm_kv_cache_usage_ratio); the running vLLM is 0.32.0 (from "
        "llm_engine_info)"
    ]
    assert checker.check(Query("keda.yaml", "new name", "avg(vllm:kv_cache_usage_perc)")).status == "ok"


def test_an_xid_alert_names_the_pod_and_model_on_its_gpu(stack: dict[str, Any]) -> None:
    # the stub driver reports XID 13 on GPU 0, which the kubelet assigned to demo/vllm-0 (serving "tiny")
    webhook = stack["webhook"]
    wait_for(lambda: "LLMGPUXidWarning" in delivered(webhook), 60, "LLMGPUXidWarning at the webhook")
    alert = delivered(webhook)["LLMGPUXidWarning"]
    labels = {k: alert["labels"].get(k) for k in ("severity", "node", "gpu", "xid", "namespace", "pod", "model")}
    assert labels == {
        "severity": "warning",
        "node": "gpu-0",
        "gpu": "0",
        "xid": "13",
        "namespace": "demo",
        "pod": "vllm-0",
        "model": "tiny",
    }
    assert alert["annotations"]["summary"] == "GPU 0 on gpu-0 reported XID 13 (1 in 10m)."
    assert "Pod demo/vllm-0 (container vllm, model tiny) runs on it." in alert["annotations"]["description"]


def test_diagnose_names_the_replica_the_scheduler_cannot_place(stack: dict[str, Any]) -> None:
    """`llm-exporter diagnose` on the real cluster role's view: the 4-GPU replica the kube-scheduler leaves
    Unschedulable on 2/2/1/1 free GPUs is the placement verdict, with the arithmetic, for the namespace whose
    engine queues."""
    import time

    from exporter.diagnose.collect import read, rfc3339
    from exporter.diagnose.promql import Scope
    from exporter.diagnose.walk import walk

    prom = stack["prometheus"]
    wait_for(lambda: bool(query(prom, 'llm:diagnosis{verdict="placement.fragmented"}')), 60, "the Diagnosis row")
    at = time.time()
    report = walk(read(HttpPrometheus(prom), Scope("demo"), at), rfc3339(at - 900), "demo")
    placement = [f for f in report.findings if f.stage == "placement"]
    assert [f.verdict for f in placement] == [
        "demo/vllm-big-0 is Pending: 4 nvidia.com/gpu on one node needed; 6 free as 2/2/1/1 on 4 node(s)"
    ], report
    assert report.telemetry == () and report.findings[0] == placement[0]


def test_audit_thresholds_are_the_measured_ones(stack: dict[str, Any]) -> None:
    """`audit --prometheus`: the demo engine's cold start (the cluster role's start-up histograms) and request
    duration (the replayed vLLM's, joined to its workload through llm_replica_pod_info) replace the defaults,
    and the live series of the cluster role say the same checks fail."""
    prom, ns = stack["prometheus"], "demo"
    request_p99 = measured.request_p99("7d")
    wait_for(lambda: bool(query(prom, measured.COLD_START)), 60, "the demo engine's cold start")
    wait_for(lambda: bool(query(prom, request_p99)), 60, "the demo engine's request duration p99")
    cold = float(query(prom, measured.COLD_START)[0]["value"][1])
    p99 = float(query(prom, request_p99)[0]["value"][1])
    args = parser("audit").parse_args(["audit", "--kubeconfig", stack["kubeconfig"], "-n", ns, "--prometheus", prom,
                                       "--output", "json"])  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert audit(args, out, err) == 1, err.getvalue()
    records = {r["check"]: r for r in json.loads(out.getvalue()) if r["name"] == "vllm"}
    cooldown = records["autoscaler-cooldown-short"]
    assert (cooldown["threshold"], cooldown["threshold_source"]) == (pytest.approx(cold, rel=1e-3), "measured")
    assert cooldown["status"] == ("fail" if cold > 300 else "pass")  # the HPA's default window: 300 s
    for name in ("grace-period-short", "ingress-timeout-short"):
        assert (records[name]["threshold"], records[name]["threshold_source"]) == (
            pytest.approx(p99, rel=1e-3),
            "measured",
        )
    assert records["ingress-timeout-short"]["status"] == ("pass" if p99 < 600 else "fail")  # the Ingress: 600 s
    # the StatefulSet has no probes, no preStop, no PDB, and sets no --max-model-len
    assert {"no-readiness-probe", "no-prestop", "no-pdb", "context-oversized"} <= {
        c for c, r in records.items() if r["status"] == "fail"
    }
    live = {s["metric"]["check"]: s["value"][1] for s in query(prom, f'llm_workload_check_failing{{namespace="{ns}"}}')}
    assert {c for c, v in live.items() if v == "1"} >= {"no-readiness-probe", "no-prestop", "no-pdb",
                                                        "context-oversized"}  # fmt: skip
