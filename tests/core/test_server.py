from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter import server
from exporter.catalogue import engine
from exporter.collect import CollectorSet
from exporter.demo.vllm_env import free_port
from exporter.exposition import Family
from tests.core.serving import serving
from tests.engines.engine_servers import engine_server, recorded


class Raising:
    name = "broken"

    def collect(self) -> list[Family]:
        raise RuntimeError("boom")


class Fixed:
    name = "fixed"

    def __init__(self) -> None:
        self.is_ready = False

    def ready(self) -> bool:
        return self.is_ready

    def collect(self) -> list[Family]:
        family = Family(engine.ENGINE_UP)
        family.add(("ns", "p", "vllm"), 1)
        return [family]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def running() -> Iterator[tuple[str, Fixed]]:
    fixed = Fixed()
    with serving(CollectorSet([Raising(), fixed])) as port:
        yield f"http://127.0.0.1:{port}", fixed


def test_a_raising_collector_is_isolated_and_reported(running: tuple[str, Fixed]) -> None:
    base, _ = running
    status, text = get(base + "/metrics")
    assert status == 200
    assert 'llm_engine_up{namespace="ns",pod="p",engine="vllm"} 1' in text
    assert 'llm_exporter_collector_success{collector="broken"} 0' in text
    assert 'llm_exporter_collector_success{collector="fixed"} 1' in text
    assert 'llm_exporter_build_info{version="0.1.0",python_version="' in text


def test_health_and_readiness(running: tuple[str, Fixed]) -> None:
    base, fixed = running
    assert get(base + "/healthz") == (200, "ok\n")
    assert get(base + "/readyz")[0] == 503
    fixed.is_ready = True
    assert get(base + "/readyz") == (200, "ready\n")
    assert get(base + "/nope")[0] == 404


def test_listen_parsing() -> None:
    assert server.parse_listen(":8490") == ("0.0.0.0", 8490)
    assert server.parse_listen("[::1]:9") == ("::1", 9)
    with pytest.raises(ValueError):
        server.parse_listen("localhost")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_serve_with_a_bad_config_names_the_keys_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("engines: {timeout_seconds: 0, targetz: []}\n")
    result = cli("serve", "--config", str(path), "--listen", "127.0.0.1:0")
    assert result.returncode == 2
    assert "engines.targetz: unknown key" in result.stderr
    assert "engines.timeout_seconds: must be in (0, 60]" in result.stderr


def test_serve_with_a_bad_web_config_names_the_keys_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("basic_auth_users: {alice: hunter2}\ntls_server_config: {cert_file: tls.crt}\n")
    result = cli("serve", "--web-config", str(path), "--listen", "127.0.0.1:0")
    assert result.returncode == 2
    assert "basic_auth_users.alice: expected a bcrypt hash" in result.stderr
    assert "tls_server_config.key_file: required when TLS is configured" in result.stderr
    assert "hunter2" not in result.stderr  # the error names the key, never echoes a secret


def test_serve_end_to_end_against_a_recorded_engine(tmp_path: Path) -> None:
    with engine_server("ok", recorded("0.32.0")) as engine_srv:
        path = tmp_path / "c.yaml"
        path.write_text(f"engines: {{targets: [{{url: '{engine_srv.url}', labels: {{namespace: d, pod: v}}}}]}}\n"
                        "gpu: {enabled: 'false'}\n")  # fmt: skip
        address = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "exporter", "serve", "--config", str(path), "--listen", f"127.0.0.1:{address}"]
        )
        try:
            text = ""
            for _ in range(100):
                try:
                    text = get(f"http://127.0.0.1:{address}/metrics")[1]
                    break
                except OSError:
                    time.sleep(0.1)
            assert 'llm_engine_up{namespace="d",pod="v",engine="vllm"} 1' in text
            assert 'llm_generation_tokens_total{namespace="d",pod="v",engine="vllm",model="tiny",dp_rank="0"}' in text
        finally:
            proc.terminate()
            assert proc.wait(10) == 0


def test_mappings_command() -> None:
    result = cli("mappings", "--version", "0.9.1")
    assert result.returncode == 0
    # columns as wide as the longest canonical name
    assert re.search(r"^0\.9\.1 +llm_kv_cache_usage_ratio +vllm:gpu_cache_usage_perc$", result.stdout, re.M)
