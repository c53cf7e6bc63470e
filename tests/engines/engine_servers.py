"""Loopback engine servers that misbehave on purpose, for the engine collector's fault tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"


def recorded(version: str) -> str:
    return (FIXTURES / f"{version}.prom").read_text()


class EngineServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mode: str, body: str = "", version: str | None = "0.32.0", models: bytes | None = None) -> None:
        self.mode = mode
        self.body = body
        self.version = version
        self.models = models  # the /v1/models answer (a recorded one); None: that path serves the body
        self.models_requests = 0
        self.stop_event = threading.Event()
        self.metrics_requests = 0  # GETs of anything but /version
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: EngineServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        srv = self.server
        if self.path == "/version":
            if srv.version is None:
                self._reply(404, b"not found")
            else:
                self._reply(200, json.dumps({"version": srv.version}).encode())
            return
        if self.path == "/v1/models" and srv.models is not None:
            srv.models_requests += 1
            self._reply(200, srv.models)
            return
        srv.metrics_requests += 1
        mode = srv.mode
        if mode == "hang":
            srv.stop_event.wait(30)
            return
        if mode == "drip":  # headers at once, then one byte a second: only a total deadline stops it
            self.send_response(200)
            self.send_header("Content-Length", str(len(srv.body)))
            self.end_headers()
            for ch in srv.body.encode():
                if srv.stop_event.wait(1.0):
                    return
                self.wfile.write(bytes([ch]))
                self.wfile.flush()
            return
        if mode == "500":
            self._reply(500, b"internal error")
        elif mode == "garbage":
            self._reply(200, b"<html><body>Bad gateway</body></html>\n")
        elif mode == "huge":  # no Content-Length: the cap must apply while reading
            self.send_response(200)
            self.end_headers()
            line = b'vllm:num_requests_waiting{model_name="x"} 1\n' * 1000
            try:
                for _ in range(1000):
                    self.wfile.write(line)
            except OSError:
                return
        else:
            self._reply(200, srv.body.encode())

    def _reply(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def engine_server(
    mode: str = "ok", body: str = "", version: str | None = "0.32.0", models: bytes | None = None
) -> Iterator[EngineServer]:
    server = EngineServer(mode, body, version, models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop_event.set()
        server.shutdown()
        server.server_close()
        time.sleep(0)
