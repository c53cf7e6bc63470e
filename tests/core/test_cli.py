"""`serve` flags: exporter-toolkit's spellings (`--web.*`, `--log.*`), before or after the subcommand, with
today's spellings kept as aliases; `--help` needs none of the optional run-time libraries."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from exporter import cli
from exporter.demo.vllm_env import free_port
from tests.engines.engine_servers import engine_server, recorded

ROOT = Path(__file__).resolve().parents[2]

# Imports made to fail in the child: the run-time libraries the exporter needs only when a collector, the web
# config or a tool runs, and the tooling's own.
BLOCKER = """
import importlib.abc, sys
BLOCKED = {"pynvml", "grpc", "kubernetes", "google", "urllib3", "bcrypt", "grafanalib", "prometheus_client"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not installed")
sys.meta_path.insert(0, Block())
from exporter.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_without_optional_libraries(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER, *args], capture_output=True, text=True, timeout=60, check=False, cwd=ROOT
    )


@pytest.mark.parametrize("args", [("--help",), ("serve", "--help"), ("--log.level", "debug", "serve", "--help")])
def test_help_needs_no_optional_runtime_library(args: tuple[str, ...]) -> None:
    done = run_without_optional_libraries(*args)
    assert done.returncode == 0, done.stderr
    assert "usage: llm-exporter" in done.stdout
    if "serve" in args:
        flags = ("--web.listen-address", "--web.telemetry-path", "--web.config.file", "--log.level", "--log.format")
        assert all(flag in done.stdout for flag in flags)


def test_the_blocker_does_block() -> None:  # the test above would prove nothing if it did not
    done = run_without_optional_libraries("serve", "--web.config.file", "/nonexistent.yml")
    assert done.returncode != 0
    assert "bcrypt is not installed" in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--log.level", "debug", "--log.format", "json"],
        ["--log.level", "debug", "--log.format", "json", "serve"],
        ["--log-level", "DEBUG", "serve", "--log-format", "json"],
        ["serve", "--log-level", "debug", "--log-format", "json"],
    ],
)
def test_log_flags_before_or_after_the_subcommand(argv: list[str]) -> None:
    args = cli.parser("serve").parse_args(argv)
    assert (args.log_level, args.log_format) == ("debug", "json")


def test_log_flags_after_the_subcommand_override_those_before() -> None:
    args = cli.parser("serve").parse_args(["--log.level", "error", "serve", "--log.level", "debug"])
    assert args.log_level == "debug"
    assert cli.parser("serve").parse_args(["--log.level", "warn", "serve"]).log_level == "warn"


def test_toolkit_flags_and_todays_aliases_set_the_same_options() -> None:
    toolkit = cli.parser("serve").parse_args(
        ["serve", "--web.listen-address", ":9", "--web.config.file", "w.yml", "--web.telemetry-path", "/m"]
    )
    today = cli.parser("serve").parse_args(["serve", "--listen", ":9", "--web-config", "w.yml"])
    assert (toolkit.listen, toolkit.web_config, toolkit.telemetry_path) == (":9", "w.yml", "/m")
    assert (today.listen, today.web_config, today.telemetry_path) == (":9", "w.yml", "/metrics")


def test_the_documented_serve_line_still_parses() -> None:
    args = cli.parser("serve").parse_args(
        ["serve", "--config", "c.yaml", "--listen", "0.0.0.0:8490", "--role", "cluster", "--kubeconfig", "k"]
    )
    assert (args.config, args.listen, args.role, args.kubeconfig) == ("c.yaml", "0.0.0.0:8490", "cluster", "k")


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_serve_with_toolkit_flags_after_the_subcommand(tmp_path: Path) -> None:
    with engine_server("ok", recorded("0.32.0")) as engine_srv:
        config = tmp_path / "c.yaml"
        config.write_text(f"engines: {{targets: [{{url: '{engine_srv.url}', labels: {{namespace: d, pod: v}}}}]}}\n"
                          "gpu: {enabled: 'false'}\n")  # fmt: skip
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "exporter", "serve", "--config", str(config),
             "--web.listen-address", f"127.0.0.1:{port}", "--web.telemetry-path", "/internal/metrics",
             "--log.level", "debug", "--log.format", "json"],
            stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        try:
            for _ in range(100):
                try:
                    status, text = get(f"http://127.0.0.1:{port}/internal/metrics")
                    break
                except OSError:
                    time.sleep(0.1)
            assert status == 200
            assert 'llm_engine_up{namespace="d",pod="v",engine="vllm"} 1' in text
            assert get(f"http://127.0.0.1:{port}/metrics")[0] == 404
            assert 'href="/internal/metrics"' in get(f"http://127.0.0.1:{port}/")[1]
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=10)
        assert proc.returncode == 0
        lines = [json.loads(line) for line in stderr.splitlines()]
        assert {"debug", "info"} <= {line["level"] for line in lines}
        assert any(line["msg"].startswith("scrape took") for line in lines)


@pytest.mark.parametrize("path", ["metrics", "/", "/healthz", "/m?x=1"])
def test_a_bad_telemetry_path_exits_2_naming_the_flag(path: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "serve", "--web.telemetry-path", path, "--listen", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, check=False, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--web.telemetry-path" in done.stderr
