"""The whole exposition of `llm-exporter serve --role node`, byte for byte (node_exporter's e2e-output.txt).

The exporter runs as shipped, in its own process: the real nvidia-ml-py bindings load the stub
libnvidia-ml.so.1 (tests/gpu/stub_nvml: an H100, an A100 without GPM and an H100 in MIG mode), and the
engine targets are fake engines replaying recorded vLLM bodies (tests/fixtures/vllm: 0.32.0, 0.27.1 and
0.32.0 with --enable-mfu-metrics and its /v1/models answer) plus one target that refuses connections. No
pod-resources socket and no Kubernetes configuration: the GPU-to-pod collector is reported unavailable, as
on a node without a kubelet socket mounted. Any change to a family, a series, a help text or an order shows
as a diff of golden/node.prom; `tests/golden.py` masks only what differs between two runs.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import yaml

from exporter.demo.vllm_env import free_port
from tests import golden
from tests.bundle.servers import process, wait_http
from tests.engines.engine_servers import FIXTURES
from tests.fakes.engine import Answer, FakeEngine
from tests.gpu import stub_nvml_build

GOLDEN = Path(__file__).parent / "golden"


def vllm(metrics: str, version: str, models: str = "") -> Callable[[str], Answer]:
    """vLLM's answers: /version, the recorded /metrics body, the recorded /v1/models answer (if any)."""

    def answer(path: str) -> Answer:
        if path == "/version":
            return 200, json.dumps({"version": version})
        if path == "/metrics":
            return 200, (FIXTURES / metrics).read_text()
        if path == "/v1/models" and models:
            return 200, (FIXTURES / models).read_bytes()
        return 404, '{"detail":"Not Found"}'

    return answer


ENGINES = {
    "vllm-0": vllm("0.32.0.prom", "0.32.0"),
    "vllm-old": vllm("0.27.1.prom", "0.27.1"),
    "vllm-mfu": vllm("0.32.0-enable-mfu-metrics.prom", "0.32.0", "0.32.0-enable-mfu-metrics.models.json"),
}


def scrape(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
        assert response.status == 200
        return str(response.read().decode())


def test_node_role_exposition(tmp_path: Path) -> None:
    libs = stub_nvml_build.build(tmp_path / "stub")
    with ExitStack() as stack:
        engines = {pod: stack.enter_context(FakeEngine(answer)) for pod, answer in ENGINES.items()}
        gone = FakeEngine(lambda path: (404, ""))
        gone.close()  # its port refuses connections from now on
        targets = [{"url": e.url, "labels": {"namespace": "demo", "pod": pod}} for pod, e in engines.items()]
        targets.append({"url": gone.url, "labels": {"namespace": "demo", "pod": "vllm-gone"}})
        config = {
            "engines": {"timeout_seconds": 10, "targets": targets},
            "gpu": {"enabled": "true", "pod_resources_socket": str(tmp_path / "no-kubelet.sock")},
        }
        (tmp_path / "node.yaml").write_text(yaml.safe_dump(config))
        url = f"http://127.0.0.1:{free_port()}"
        args = [sys.executable, "-m", "exporter", "serve", "--role", "node", "--listen", url.removeprefix("http://")]
        args += ["--config", str(tmp_path / "node.yaml"), "--kubeconfig", str(tmp_path / "no-kubeconfig")]
        env = stub_nvml_build.env_for(libs["full"], gpus="3", no_gpm="1", mig="2")
        with process(args, tmp_path / "node.log", env) as proc:
            wait_http(f"{url}/readyz", proc=proc)
            time.sleep(0.3)  # GPM (bandwidth, SM occupancy) reads two samples at least 100 ms apart
            first = scrape(url)
            second = scrape(url)
    assert golden.exposition(first) == golden.exposition(second), "two scrapes of the same node differ"
    golden.check(GOLDEN / "node.prom", golden.exposition(first))
