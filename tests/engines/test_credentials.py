"""Basic auth to an engine: credentials from a target URL's userinfo or from `basic_auth.password_file`, sent as
an Authorization header and nowhere else: no label, log line or error ever holds the password."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from exporter.config import BasicAuth, Engines, Target
from exporter.demo.vllm_env import free_port
from exporter.engines.collector import EngineCollector
from exporter.exposition import render
from tests.engines.engine_servers import recorded

ROOT = Path(__file__).resolve().parents[2]
BODY = recorded("0.32.0")


class BasicAuthEngine:
    """vLLM 0.32.0 as recorded, behind basic auth: a 401 to any request without the expected Authorization."""

    def __init__(self, username: str, password: str) -> None:
        self.expected = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
        self.authorizations: list[str | None] = []  # the header of each request, in order
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                engine.authorizations.append(self.headers.get("Authorization"))
                if self.headers.get("Authorization") != engine.expected:
                    status, body = 401, b"unauthorized"
                elif self.path.partition("?")[0] == "/version":
                    status, body = 200, json.dumps({"version": "0.32.0"}).encode()
                elif self.path.partition("?")[0] == "/metrics":
                    status, body = 200, BODY.encode()
                else:
                    status, body = 404, b"not found"
                self.send_response(status)
                if status == 401:
                    self.send_header("WWW-Authenticate", 'Basic realm="engine"')
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def auth_engine(username: str, password: str) -> Iterator[BasicAuthEngine]:
    engine = BasicAuthEngine(username, password)
    try:
        yield engine
    finally:
        engine.close()


def collect(*targets: Target) -> str:
    collector = EngineCollector(Engines(timeout_seconds=2.0, targets=list(targets)))
    try:
        return render(collector.collect())
    finally:
        collector.close()


def up_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("llm_engine_up", "llm_engine_scrape_error"))]


PASSWORD = "p@ss:w/rd"  # "@", ":" and "/" percent-encoded in a URL, raw in a file
ENCODED = "p%40ss%3Aw%2Frd"


def test_url_userinfo_is_sent_as_basic_auth_and_kept_out_of_the_labels() -> None:
    with auth_engine("scraper", PASSWORD) as engine:
        text = collect(Target(url=f"http://scraper:{ENCODED}@127.0.0.1:{engine.port}"))
    pod = f"127.0.0.1:{engine.port}"
    assert up_lines(text) == [f'llm_engine_up{{namespace="",pod="{pod}",engine="vllm"}} 1']
    # /version answered through the same credentials: the release is the endpoint's, not inferred
    info = f'llm_engine_info{{namespace="",pod="{pod}",engine="vllm",version="0.32.0",version_source="endpoint"}} 1'
    assert info in text
    assert engine.authorizations and set(engine.authorizations) == {engine.expected}
    assert "scraper" not in text and ENCODED not in text


def test_a_password_file_is_read_at_every_scrape(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    with auth_engine("scraper", PASSWORD) as engine:
        target = Target(
            url=f"http://127.0.0.1:{engine.port}",
            labels={"namespace": "t", "pod": "p"},
            basic_auth=BasicAuth(username="scraper", password_file=str(secret)),
        )
        collector = EngineCollector(Engines(timeout_seconds=2.0, targets=[target]))
        try:
            seen = []
            for content in (PASSWORD, "rotated-away", PASSWORD, None):  # rotated, back, then the file is gone
                if content is None:
                    secret.unlink()
                else:
                    secret.write_text(content + "\n")  # a mounted Secret's value, newline and all
                seen.append(up_lines(render(collector.collect())))
        finally:
            collector.close()
    up, down = (f'llm_engine_up{{namespace="t",pod="p",engine="vllm"}} {value}' for value in (1, 0))
    assert seen == [
        [up],
        [down, 'llm_engine_scrape_error{namespace="t",pod="p",engine="vllm",reason="http_status"} 1'],
        [up],
        [down, 'llm_engine_scrape_error{namespace="t",pod="p",engine="vllm",reason="credentials"} 1'],
    ]


def test_without_credentials_the_engine_refuses_the_scrape() -> None:
    with auth_engine("scraper", PASSWORD) as engine:
        text = collect(Target(url=f"http://127.0.0.1:{engine.port}", labels={"namespace": "t", "pod": "p"}))
    assert up_lines(text) == [
        'llm_engine_up{namespace="t",pod="p",engine="unknown"} 0',
        'llm_engine_scrape_error{namespace="t",pod="p",engine="unknown",reason="http_status"} 1',
    ]
    assert engine.authorizations == [None]


# ------------------------------------------------------------------ the walk: every output of a real `serve`


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def serve_and_collect(config: Path, scrapes: int) -> tuple[list[str], str]:
    """Run `serve` at debug level on `config`, scrape /metrics `scrapes` times and the landing page once: (every
    exposition text, every stderr line joined)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--config", str(config), "--web.listen-address",
         f"127.0.0.1:{port}", "--log.level", "debug"],
        stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    texts = []
    try:
        for _ in range(100):
            try:
                texts.append(get(f"http://127.0.0.1:{port}/metrics"))
                break
            except OSError:
                time.sleep(0.1)
        texts += [get(f"http://127.0.0.1:{port}/metrics") for _ in range(scrapes - 1)]
        texts.append(get(f"http://127.0.0.1:{port}/"))
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0, stderr
    return texts, stderr


def test_no_secret_reaches_a_label_a_log_line_or_an_error(tmp_path: Path) -> None:
    secret = f"S3cr3t{uuid.uuid4().hex}"  # one string, unique to this run
    password_file = tmp_path / "password"
    password_file.write_text(secret + "\n")
    down = free_port()  # nothing listens there
    with auth_engine("scraper", secret) as engine:
        up_url = f"http://scraper:{secret}@127.0.0.1:{engine.port}"
        config = tmp_path / "config.yaml"
        config.write_text(
            json.dumps(
                {
                    "engines": {
                        "timeout_seconds": 1,
                        "targets": [
                            {"url": up_url},  # up: pod defaults to host:port
                            {"url": f"http://scraper:{secret}@127.0.0.1:{down}/metrics"},  # down, never identified
                            {
                                "url": f"http://127.0.0.1:{engine.port}/metrics?from=file",
                                "labels": {"namespace": "t", "pod": "file"},
                                "basic_auth": {"username": "scraper", "password_file": str(password_file)},
                            },
                            {
                                "url": f"http://127.0.0.1:{engine.port}/metrics?from=missing",
                                "labels": {"namespace": "t", "pod": "missing"},
                                "basic_auth": {"username": "scraper", "password_file": str(tmp_path / "absent")},
                            },
                        ],
                    },
                    "gpu": {"enabled": "false"},
                }
            )
        )
        texts, stderr = serve_and_collect(config, scrapes=2)
    metrics = texts[0]
    # the walk saw what it is meant to: both targets up and down, scraped and logged at debug level
    assert f'llm_engine_up{{namespace="",pod="127.0.0.1:{engine.port}",engine="vllm"}} 1' in metrics
    assert f'llm_engine_up{{namespace="",pod="127.0.0.1:{down}",engine="unknown"}} 0' in metrics
    assert 'llm_engine_up{namespace="t",pod="file",engine="vllm"} 1' in metrics
    assert 'llm_engine_scrape_error{namespace="t",pod="missing",engine="unknown",reason="credentials"} 1' in metrics
    assert f"127.0.0.1:{down}/metrics: connect:" in stderr  # the down target's fetch error, logged
    assert f"basic_auth.password_file {tmp_path / 'absent'}: cannot read" in stderr  # the key and the file
    # the errors of configs with a malformed URL, or malformed YAML on a URL's line
    errors: list[str] = []
    for text in (
        f"engines: {{targets: [{{url: 'ftp://scraper:{secret}@127.0.0.1:8000'}}]}}\n",
        f"engines: {{targets: [{{url: 'http://scraper:{secret}/x@127.0.0.1:8000'}}]}}\n",  # a raw "/" in it
        f"engines: {{targets: [{{url: 'http://{secret}@127.0.0.1:8000', basic_auth: {{username: u}}}}]}}\n",
        f"engines: {{targets: [{{url: http://scraper:{secret}@127.0.0.1:8000, labels: {{pod: [}}]}}\n",
    ):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "exporter", "serve", "--config", str(bad), "--listen", "127.0.0.1:0"],
                capture_output=True, text=True, timeout=30, check=False, cwd=ROOT,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.fail(f"serve started on malformed config {len(errors)}")  # (the config holds the secret)
        assert done.returncode == 2, done.stderr
        errors.append(done.stdout + done.stderr)
    assert "url: 'ftp://scraper:***@127.0.0.1:8000' is not an http(s) URL with a host" in errors[0]
    assert "basic_auth: set either basic_auth or credentials in the url, not both" in errors[2]
    walked = [*texts, stderr, *errors]
    pieces = {secret[i : i + 8] for i in range(len(secret) - 7)}  # a truncated quote leaks a part: none may show
    leaks = [line for text in walked for line in text.splitlines() if any(piece in line for piece in pieces)]
    assert leaks == []
