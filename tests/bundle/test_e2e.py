"""End to end with real parts: Prometheus scrapes real `llm-exporter serve` processes, evaluates the generated
rules and sends to a real Alertmanager, whose webhook lands in this test; every dashboard query returns data;
`check` flags a query on a renamed vLLM metric.

Peers: a loopback server replaying the recorded vLLM 0.32.0 body (counters growing with each scrape, 7
requests waiting), the node role scraping it; the cluster role against the fake Kubernetes API with six free
GPUs spread 2/2/1/1 and a Pending 4-GPU pod; the GPU collector on the fake NVML (no GPU here) with one pod
attributed, served from this process. Rules are rendered from the same source with short `for`s.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from alerts import formats
from alerts.thresholds import DEFAULT
from exporter.bundle import check, render
from exporter.bundle.queries import Query, file_queries
from exporter.collect import CollectorSet
from exporter.demo.vllm_env import free_port
from exporter.exposition import render as render_exposition
from exporter.gpu.collector import GpuCollector
from exporter.gpu.pods import GpuPodsCollector
from exporter.sources.podresources import ContainerDevices
from exporter.sources.prometheus import HttpPrometheus
from tests.bundle.servers import Served, alertmanager, process, prometheus, query, static_job, wait_for
from tests.bundle.servers import wait_http as wait_ready
from tests.fakes.kube_api import FakeKubeAPI
from tests.gpu.fake_nvml import FakeGpu, FakeNvml
from tests.kube.objects import node, pod

pytestmark = pytest.mark.slow

FIXTURE = render.ROOT / "tests/fixtures/vllm/0.32.0.prom"
COUNTER = re.compile(r"^(vllm:\S+?(?:_total|_bucket|_count|_sum)(?:\{[^}]*\})?) (\S+)$", re.MULTILINE)
GPU_UUID = "GPU-11111111-2222-3333-4444-000000000000"


def vllm_body(scrape: int) -> str:
    """The recorded body with 7 requests waiting and every counter growing with each scrape."""
    body = FIXTURE.read_text().replace(
        'vllm:num_requests_waiting{engine="0",model_name="tiny"} 0.0',
        'vllm:num_requests_waiting{engine="0",model_name="tiny"} 7.0',
    )
    assert "} 7.0" in body, "the fixture no longer has the waiting line this test rewrites"
    return COUNTER.sub(lambda m: f"{m.group(1)} {float(m.group(2)) * scrape + scrape}", body)


class FakeEngine(Served):
    def __init__(self) -> None:
        self.scrapes = 0
        super().__init__(self._answer)

    def _answer(self, path: str) -> tuple[int, str]:
        if path == "/version":
            return 200, json.dumps({"version": "0.32.0"})
        if path == "/metrics":
            self.scrapes += 1
            return 200, vllm_body(self.scrapes)
        return 404, ""


class Lister:
    socket_path = "fake"

    def list(self) -> list[ContainerDevices]:
        return [ContainerDevices("demo", "vllm-0", "vllm", "nvidia.com/gpu", (GPU_UUID,))]

    def close(self) -> None:
        pass


def gpu_target() -> tuple[Served, CollectorSet]:
    """The real GPU collectors on the fake NVML, rendered on every GET."""
    gpu = GpuCollector(FakeNvml([FakeGpu(GPU_UUID)]))
    pods = GpuPodsCollector(Lister(), devices=gpu.devices)
    collectors = CollectorSet([gpu, pods])
    collectors.start()
    render_exposition(collectors.collect())  # learn the devices before the first attribution
    pods.refresh()
    return Served(lambda path: (200, render_exposition(collectors.collect()))), collectors


def two_two_one_one(api: FakeKubeAPI) -> None:
    for i, used in enumerate((6, 6, 7, 7)):  # four 8-GPU nodes: 2/2/1/1 free
        api.apply(node(f"gpu-{i}", 8))
        api.apply(pod(f"train-{i}", used, namespace="batch", node=f"gpu-{i}"))
    api.apply(pod("vllm-big-0", 4, namespace="demo"))  # 6 free, but no node holds 4


def serve(tmp: Path, name: str, role: str, config: dict[str, Any], kubeconfig: str = "") -> Any:
    port = free_port()
    (tmp / f"{name}.yaml").write_text(yaml.safe_dump(config))
    args = [
        sys.executable,
        "-m",
        "exporter",
        "serve",
        "--role",
        role,
        "--listen",
        f"127.0.0.1:{port}",
        "--config",
        str(tmp / f"{name}.yaml"),
    ]
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    return process(args, tmp / f"{name}.log"), f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("e2e")
    engine, webhook = FakeEngine(), Served()
    gpu, gpu_collectors = gpu_target()
    api = FakeKubeAPI(bookmark_interval=0.5)
    api.start()
    api.write_kubeconfig(tmp / "kubeconfig")
    two_two_one_one(api)
    fast = replace(DEFAULT, queue_for="2s", fragmented_for="2s", evaluation_interval="1s")
    rules = tmp / "rules.yaml"
    rules.write_text(formats.rule_file(fast))
    node_cfg = {
        "engines": {
            "timeout_seconds": 0.8,
            "targets": [{"url": engine.url, "labels": {"namespace": "demo", "pod": "vllm-0"}}],
        },
        "gpu": {"enabled": "false"},
    }
    node_proc, node_url = serve(tmp, "node", "node", node_cfg)
    cluster_proc, cluster_url = serve(tmp, "cluster", "cluster", {}, str(tmp / "kubeconfig"))
    try:
        with node_proc as np, cluster_proc as cp:
            wait_ready(f"{node_url}/readyz", proc=np)
            wait_ready(f"{cluster_url}/readyz", timeout=60, proc=cp)
            scrape = [
                static_job("llm-exporter", [node_url, gpu.url], {"node": "gpu-0"}),
                static_job("llm-exporter-cluster", [cluster_url])
                | {"relabel_configs": [{"target_label": "job", "replacement": "llm-exporter"}]},
                static_job("vllm", [engine.url]),  # users who scrape vLLM directly, for the rename check
            ]
            with (
                alertmanager(tmp / "am", f"{webhook.url}/hook") as am_url,
                prometheus(tmp / "prom", scrape, rule_files=[rules], alertmanager_url=am_url) as prom_url,
            ):
                yield {"prometheus": prom_url, "webhook": webhook, "tmp": tmp}
    finally:
        api.stop()
        for server in (engine, webhook, gpu):
            server.close()
        gpu_collectors.close()


def delivered(webhook: Served) -> dict[str, dict[str, Any]]:
    return {a["labels"]["alertname"]: a for post in webhook.posts for a in post.get("alerts", [])}


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
    checker = check.Checker(HttpPrometheus(prom))
    queries = file_queries(render.ROOT / "dashboards/overview.json")
    assert len(queries) > 30
    results = [checker.check(q) for q in queries]
    assert [(r.query.where, r.reasons) for r in results if r.status != "ok"] == []


def test_check_flags_a_query_on_a_renamed_vllm_metric(stack: dict[str, Any]) -> None:
    checker = check.Checker(HttpPrometheus(stack["prometheus"]))
    wait_for(lambda: bool(query(stack["prometheus"], "vllm:kv_cache_usage_perc")), 30, "the direct vLLM scrape")
    old = checker.check(Query("keda.yaml", "ScaledObject vllm trigger 0", "avg(vllm:gpu_cache_usage_perc)"))
    assert old.status == "empty"
    assert old.reasons == [
        "vllm:gpu_cache_usage_perc: never present in the last 7d (not scraped, or renamed); "
        "similar names present: vllm:kv_cache_usage_perc, llm_kv_cache_usage_ratio"
    ]
    assert checker.check(Query("keda.yaml", "new name", "avg(vllm:kv_cache_usage_perc)")).status == "ok"
