"""`llm-exporter diagnose` on the real llama.cpp `llama-server` (the tiny random-weight model of
llamacpp_server.py), scraped by the exporter and a real Prometheus 3 loading the bundle's rules.

llama.cpp has no first-token, inter-token or request-duration histogram in any release: idle, the report is
healthy (exit 0) with those caveats, not "cannot tell"; under a burst of long requests beyond its two slots,
the queue it does have is the finding.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from exporter.demo.vllm_env import free_port
from exporter.diagnose.collect import queries as planned
from exporter.diagnose.limits import DEFAULT
from exporter.diagnose.promql import Scope
from tests.bundle.servers import prometheus, query, serve_exporter, static_job, wait_for
from tests.e2e import llamacpp_server as llama
from tests.e2e.test_llamacpp_e2e import complete

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[2]
SLOTS, BURST = 2, 16  # 16 users of 2 slots: up to 14 deferred, above the bundle's queue threshold (5)
VERSION = "0c1e57098"  # built from an sdist, llama.cpp says b0-unknown: the release is inferred from the names
CAVEATS = [
    ("llama.cpp 0c1e57098 has no first-token histogram: TTFT not judged", "llm_time_to_first_token_seconds"),
    (
        "llama.cpp 0c1e57098 has no inter-token histogram: inter-token latency not judged",
        "llm_inter_token_latency_seconds",
    ),
    (
        "llama.cpp 0c1e57098 has no request-duration histogram: answers cut by a route timeout not judged",
        "llm_request_duration_seconds",
    ),
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("diagnose")
    binary = llama.ensure_server()
    model = llama.write_tiny_model(binary.parent / "ggml-vocab-llama-spm.gguf", tmp / "tiny.gguf")
    server = llama.start(binary, model, tmp / "llama.log", slots=SLOTS)
    try:
        config = {
            "engines": {"targets": [{"url": server.url, "labels": {"namespace": "e2e", "pod": "llama-0"}}]},
            "gpu": {"enabled": "false"},
        }
        served, exporter = serve_exporter(tmp, "exporter", "node", f"127.0.0.1:{free_port()}", config)
        with (
            served,
            prometheus(
                tmp / "prometheus",
                [static_job("llm-exporter", [exporter])],
                rule_files=[ROOT / "alerts" / "llm-exporter.rules.yaml"],
                interval="2s",  # a scrape timeout of 1 s fails on a loaded machine: an exporter "down" is no wait
            ) as prom,
        ):
            wait_for(lambda: bool(query(prom, 'llm_engine_info{namespace="e2e"}')), 60, "the engine's series")
            yield {"prometheus": prom, "server": server}
    finally:
        server.stop()


COMPUTE_SHARE = {qid: expr for _, qid, expr in planned(Scope("e2e", window="2m"), DEFAULT)}["engine.compute.share"]


def diagnose(prom: str, window: str) -> tuple[int, dict[str, Any], str]:
    args = [sys.executable, "-m", "exporter", "diagnose", "--prometheus", prom, "--namespace", "e2e"]
    args += ["--window", window, "--output", "json"]
    done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout) if done.stdout else {}, done.stderr


def caveats(body: dict[str, Any]) -> list[tuple[str, str]]:
    assert {(c["namespace"], c["engine"], c["version"]) for c in body["caveats"]} == {("e2e", "llamacpp", VERSION)}
    return [(c["caveat"], c["metric"]) for c in body["caveats"]]


def test_idle_llama_cpp_is_healthy_with_its_caveats(stack: dict[str, Any]) -> None:
    prom = stack["prometheus"]
    info = query(prom, 'llm_engine_info{namespace="e2e"}')
    assert [(s["metric"]["engine"], s["metric"]["version"]) for s in info] == [("llamacpp", VERSION)]
    # the series the walk would have read are truly absent, the queue gauge is there
    assert query(prom, "llm_time_to_first_token_seconds_count") == []
    assert query(prom, "llm_request_duration_seconds_count") == []
    wait_for(lambda: bool(query(prom, 'llm_requests_waiting{namespace="e2e"}')), 30, "the queue gauge")
    code, body, err = diagnose(prom, "30s")
    assert (code, body["status"], body["telemetry"], body["findings"]) == (0, "healthy", [], []), err
    assert caveats(body) == CAVEATS


def test_a_burst_beyond_the_slots_is_a_finding_from_the_queue(stack: dict[str, Any]) -> None:
    prom, server = stack["prometheus"], stack["server"]
    deepest = 'max_over_time(llm_requests_waiting{namespace="e2e"}[2m])'
    stop = threading.Event()

    def client(i: int) -> None:  # one user sending long requests back to back until the queue was seen
        while not stop.is_set():
            complete(server.url, 480, f"burst {i} holds a slot")

    with ThreadPoolExecutor(BURST) as pool:
        clients = [pool.submit(client, i) for i in range(BURST)]
        try:  # a request takes well under a second here: the queue is kept deep until a scrape has seen it
            wait_for(lambda: float((query(prom, deepest) or [{"value": [0, "0"]}])[0]["value"][1]) > 5, 120, "a queue")
        finally:
            stop.set()
        for c in clients:
            c.result()
    # a queue beyond the slots is the bundle's `compute` class while it lasts (requests wait, nothing else
    # binds); once it held for under half the window, the walk has nothing left to explain it by, which is
    # what this test pins (the class itself is the engine verdict's, tested with the bundle)
    wait_for(lambda: not query(prom, COMPUTE_SHARE), 120, "the compute class under half the window")
    code, body, err = diagnose(prom, "2m")
    assert (code, body["status"], body["telemetry"]) == (1, "findings", []), (err, body, query(prom, deepest))
    [finding] = body["findings"]
    assert (finding["stage"], finding["owner"], finding["namespace"], finding["model"]) == (
        "waiting",
        "platform",
        "e2e",
        "",
    )
    # no cluster role runs here: scaling and placement were not judged, and the report says so
    assert re.fullmatch(
        r"users of e2e/ wait \(queue\) and no stage explains it: up to (\d+) waiting; no cluster role reports "
        r"autoscalers, pending pods or routes, so scaling and placement were not judged",
        finding["verdict"],
    ), finding["verdict"]
    assert 5 < int(re.findall(r"up to (\d+) waiting", finding["verdict"])[0]) <= BURST - SLOTS
    assert finding["fix"].startswith("Requests queue: add replicas")
    assert caveats(body) == CAVEATS
