"""Real peers for the bundle tests: Prometheus 3 and Alertmanager 0.35 built from their pinned Go modules
(tests/peers.py), and small loopback HTTP servers."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from exporter.demo.vllm_env import free_port
from tests.peers import peer

_BINARIES = {"PROMETHEUS": "prometheus", "ALERTMANAGER": "alertmanager", "PROMTOOL": "promtool"}


def __getattr__(name: str) -> str:
    # PROMETHEUS, ALERTMANAGER, PROMTOOL: located (built on first use) only when a test asks for one
    if name in _BINARIES:
        return peer(_BINARIES[name])
    raise AttributeError(name)


class Served:
    """A loopback HTTP server answering GET with `body()` and recording POSTed JSON (a webhook receiver)."""

    def __init__(self, body: Callable[[str], tuple[int, str]] = lambda path: (404, "")) -> None:
        self.body = body
        self.posts: list[Any] = []
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, text = served.body(self.path)
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                served.posts.append(json.loads(self.rfile.read(length) or b"null"))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_http(url: str, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def query(prometheus_url: str, expr: str) -> list[dict[str, Any]]:
    data = urllib.parse.urlencode({"query": expr}).encode()
    with urllib.request.urlopen(f"{prometheus_url}/api/v1/query", data=data, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.5)


@contextmanager
def process(args: list[str], log: Path, env: Mapping[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serve_exporter(
    tmp: Path,
    name: str,
    role: str,
    address: str,
    config: dict[str, Any],
    kubeconfig: str = "",
    env: Mapping[str, str] | None = None,
) -> tuple[Any, str]:
    """`llm-exporter serve` as its own process at `address` with `config` (written to tmp/<name>.yaml), as a
    context manager from `process`, and its base URL."""
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    args = [sys.executable, "-m", "exporter", "serve", "--role", role, "--listen", address, "--config", str(path)]
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    return process(args, tmp / f"{name}.log", env), f"http://{address}"


@contextmanager
def prometheus(
    workdir: Path,
    scrape_configs: list[dict[str, Any]],
    *,
    rule_files: Sequence[Path] = (),
    alertmanager_url: str = "",
    interval: str = "1s",
    external_labels: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """A real Prometheus on a free loopback port; yields its URL."""
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
        "scrape_configs": scrape_configs,
        "rule_files": [str(p) for p in rule_files],
    }
    if external_labels:
        config["global"]["external_labels"] = dict(external_labels)
    if alertmanager_url:
        host = urllib.parse.urlsplit(alertmanager_url).netloc
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [host]}]}]}
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = [
        peer("prometheus"),
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--web.enable-lifecycle",
        "--log.level=warn",
    ]
    url = f"http://127.0.0.1:{port}"
    with process(args, workdir / "prometheus.log") as proc:
        wait_http(f"{url}/-/ready", proc=proc)
        yield url


@contextmanager
def alertmanager(workdir: Path, webhook_url: str) -> Iterator[str]:
    """A real Alertmanager routing every alert to `webhook_url` at once; yields its URL."""
    config = {
        "route": {"receiver": "test", "group_by": ["alertname"], "group_wait": "0s", "group_interval": "1s"},
        "receivers": [{"name": "test", "webhook_configs": [{"url": webhook_url, "send_resolved": False}]}],
    }
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "alertmanager.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = [
        peer("alertmanager"),
        f"--config.file={workdir / 'alertmanager.yml'}",
        f"--storage.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # no gossip: a single instance
        "--log.level=warn",
    ]
    url = f"http://127.0.0.1:{port}"
    with process(args, workdir / "alertmanager.log") as proc:
        wait_http(f"{url}/-/ready", proc=proc)
        yield url


def static_job(name: str, targets: list[str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    hosts = [urllib.parse.urlsplit(t).netloc for t in targets]
    return {"job_name": name, "static_configs": [{"targets": hosts, "labels": labels or {}}]}
