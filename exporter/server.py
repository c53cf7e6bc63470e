"""The HTTP server: /metrics, /healthz (live), /readyz (ready after the first sync).

A scrape runs the role's collectors under one lock: Prometheus scrapes rarely overlap, and serialising
them keeps a scrape storm from multiplying the load on engines and NVML. Concurrent scrapes that arrive
while one runs wait for it and are served its result.
"""

from __future__ import annotations

import logging
import platform
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from exporter import __version__
from exporter.catalogue import exporter_self
from exporter.collect import CollectorSet
from exporter.exposition import CONTENT_TYPE, Family, render

log = logging.getLogger(__name__)

LANDING = """<html><head><title>llm-exporter</title></head><body>
<h1>llm-exporter</h1><p>Role: {role}. <a href="/metrics">Metrics</a>, <a href="/healthz">healthz</a>,
<a href="/readyz">readyz</a>.</p></body></html>
"""


class Scraper:
    """Renders the exposition of one role; overlapping scrapes share one collection."""

    def __init__(self, collectors: CollectorSet, role: str) -> None:
        self.collectors = collectors
        self.role = role
        self._lock = threading.Lock()
        self._generation = 0
        self._last = ""

    def scrape(self) -> str:
        generation = self._generation
        with self._lock:
            if self._generation != generation:  # another scrape finished while we waited: reuse it
                return self._last
            build = Family(exporter_self.BUILD_INFO)
            build.add((__version__, platform.python_version(), self.role), 1.0)
            self._last = render([*self.collectors.collect(), build])
            self._generation += 1
            return self._last


class ExporterServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], scraper: Scraper) -> None:
        self.scraper = scraper
        super().__init__(address, Handler)


class Handler(BaseHTTPRequestHandler):
    server: ExporterServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        scraper = self.server.scraper
        if path == "/metrics":
            start = time.perf_counter()
            body = scraper.scrape()
            self._send(HTTPStatus.OK, body, CONTENT_TYPE)
            log.debug("scrape took %.1f ms", (time.perf_counter() - start) * 1000)
        elif path == "/healthz":
            self._send(HTTPStatus.OK, "ok\n")
        elif path == "/readyz":
            if scraper.collectors.ready():
                self._send(HTTPStatus.OK, "ready\n")
            else:
                self._send(HTTPStatus.SERVICE_UNAVAILABLE, "not ready: waiting for the first sync\n")
        elif path == "/":
            self._send(HTTPStatus.OK, LANDING.format(role=scraper.role), "text/html; charset=utf-8")
        else:
            self._send(HTTPStatus.NOT_FOUND, "not found\n")

    def _send(self, status: HTTPStatus, body: str, content_type: str = "text/plain; charset=utf-8") -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def parse_listen(listen: str) -> tuple[str, int]:
    """ "HOST:PORT", ":PORT" or "[::1]:PORT" → (host, port). Raises ValueError."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"--listen {listen!r}: expected HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def serve(collectors: CollectorSet, role: str, listen: str, stop: threading.Event | None = None) -> None:
    """Start the collectors' background work and serve until `stop` is set (or forever)."""
    address = parse_listen(listen)
    server = ExporterServer(address, Scraper(collectors, role))
    collectors.start()
    thread = threading.Thread(target=server.serve_forever, name="http", daemon=True)
    thread.start()
    log.info("llm-exporter %s role=%s listening on %s:%d", __version__, role, *server.server_address[:2])
    try:
        (stop or threading.Event()).wait()
    finally:
        server.shutdown()
        server.server_close()
        collectors.close()
