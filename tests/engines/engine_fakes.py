"""Loopback fakes that serve exactly what each engine serves: its metrics path and its own version endpoint
(and nothing vLLM-shaped: no /version unless the engine has one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.engines.engine_bodies import body


def routes(engine: str, version: str, answered: str | None, metrics_enabled: bool = True) -> dict[str, tuple[int, str]]:
    text = body(engine, version)
    if engine == "sglang":
        return {"/metrics": (200, text), "/get_server_info": (200, json.dumps({"version": answered, "tp_size": 1}))}
    if engine == "tgi":
        info = {"model_id": "tiny", "version": answered, "sha": "abc", "docker_label": None}
        return {"/metrics": (200, text), "/info": (200, json.dumps(info))}
    if engine == "trtllm":
        stats = json.dumps([{"iter": 1, "numActiveRequests": 0}])  # trtllm-serve's /metrics: JSON iteration stats
        return {
            "/metrics": (200, stats),
            "/prometheus/metrics": (200, text),
            "/version": (200, json.dumps({"version": answered})),
        }
    if engine == "llamacpp":
        metrics = (
            (200, text)
            if metrics_enabled
            else (501, json.dumps({"error": {"code": 501, "type": "not_supported_error"}}))
        )
        return {"/metrics": metrics, "/props": (200, json.dumps({"build_info": answered, "model_alias": "tiny"}))}
    if engine == "lmdeploy":
        return {"/metrics": (200, text)}  # no version endpoint
    raise KeyError(engine)


class FakeEngine(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, paths: dict[str, tuple[int, str]]) -> None:
        self.paths = paths
        self.requested: list[str] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeEngine

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requested.append(self.path)
        status, text = self.server.paths.get(self.path, (404, "Not Found"))
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def fake_engine(paths: dict[str, tuple[int, str]]) -> Iterator[FakeEngine]:
    server = FakeEngine(paths)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
