"""The HTTP server: /metrics, /healthz (live), /readyz (ready after the first sync); TLS and basic auth.

A scrape runs the role's collectors under one lock: Prometheus scrapes rarely overlap, and serialising
them keeps a scrape storm from multiplying the load on engines and NVML. Concurrent scrapes that arrive
while one runs wait for it and are served its result. Connections are bounded too (`max_connections`):
past the bound a connection is closed at once and counted, so a storm costs threads, never memory.

TLS and basic auth come from a web config file (exporter/webconfig.py), off by default. The probes
/healthz and /readyz answer without credentials (kubelet probes carry none, and they reveal no secret: /readyz
names what it waits for, the resources whose first sync is pending and the API server's status for them);
TLS, when on, covers every path. The TLS handshake runs in the connection's thread, not the accept loop,
so a client that stalls mid-handshake cannot block others.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import logging
import platform
import socket
import ssl
import sys
import threading
import time
from collections import Counter
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from exporter import __version__, logs
from exporter.catalogue import exporter_self
from exporter.collect import CollectorSet
from exporter.deprecations import with_old_names
from exporter.exposition import (
    CONTENT_TYPE,
    OPENMETRICS_CONTENT_TYPE,
    Family,
    render,
    render_openmetrics,
)
from exporter.negotiation import SCRAPE_TIMEOUT_HEADER, accepts_gzip, scrape_budget, wants_openmetrics
from exporter.webconfig import BasicAuth, TlsContexts, WebConfig

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 64  # Prometheus holds one keep-alive connection per scraper; 64 leaves room for people
IDLE_TIMEOUT_SECONDS = 60.0  # a connection silent this long is closed (also bounds a stalled handshake)
DEFAULT_TELEMETRY_PATH = "/metrics"
UNAUTHENTICATED_PATHS = frozenset({"/healthz", "/readyz"})
GZIP_LEVEL = 1  # the fastest level: most of the gain on repetitive exposition text for a fraction of the CPU
REJECT_REASONS = ("connection_limit", "unauthorized", "tls_handshake")

LANDING = """<html><head><title>llm-exporter</title></head><body>
<h1>llm-exporter</h1><p>Role: {role}. <a href="{metrics}">Metrics</a>, <a href="/healthz">healthz</a>,
<a href="/readyz">readyz</a>.</p></body></html>
"""


class Rejections:
    """Counts of turned-away connections and requests, by reason (thread-safe)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, reason: str) -> None:
        with self._lock:
            self._counts[reason] += 1

    def family(self) -> Family:
        family = Family(exporter_self.HTTP_REJECTED)
        with self._lock:
            for reason in REJECT_REASONS:
                family.add((reason,), float(self._counts[reason]))
        return family


class Scraper:
    """Renders the exposition of one role; overlapping scrapes share one collection."""

    def __init__(self, collectors: CollectorSet, role: str, rejections: Rejections | None = None) -> None:
        self.collectors = collectors
        self.role = role
        self.rejections = rejections or Rejections()
        self._lock = threading.Lock()
        self._generation = 0
        self._last: list[Family] = []

    def scrape(self, budget_seconds: float | None = None, *, openmetrics: bool = False) -> str:
        """The exposition (text format, or OpenMetrics); collectors get `budget_seconds` (None: the default)."""
        write = render_openmetrics if openmetrics else render
        generation = self._generation
        with self._lock:
            if self._generation != generation:  # another scrape finished while we waited: reuse it
                return write(self._last)
            build = Family(exporter_self.BUILD_INFO)
            build.add((__version__, platform.python_version(), self.role), 1.0)
            own = [build, self.rejections.family(), logs.suppressed_family()]
            self._last = with_old_names([*self.collectors.collect(budget_seconds), *own])
            self._generation += 1
            return write(self._last)


class ExporterServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        scraper: Scraper,
        web: WebConfig | None = None,
        max_connections: int = MAX_CONNECTIONS,
        telemetry_path: str = DEFAULT_TELEMETRY_PATH,
    ) -> None:
        self.scraper = scraper
        self.telemetry_path = telemetry_path
        self.web = web or WebConfig()
        self.auth = BasicAuth(self.web.users) if self.web.users else None
        self.tls = TlsContexts(self.web.tls) if self.web.tls else None
        self.max_connections = max_connections
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One log line, not socketserver's traceback on stderr: a client hanging up is routine."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, ssl.SSLError)):
            log.debug("connection from %s ended: %s", client_address[0], type(exc).__name__)
        else:
            log.error("error serving %s", client_address[0], exc_info=exc)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.scraper.rejections.add("connection_limit")
            log.warning("more than %d connections at once: closing new ones", self.max_connections)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(IDLE_TIMEOUT_SECONDS)
        if self.tls is not None:
            try:
                request = self.tls.current().wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as exc:
                self.scraper.rejections.add("tls_handshake")
                log.info("TLS handshake failed: %s", type(exc).__name__)
                return
        try:
            super().finish_request(request, client_address)
        finally:
            if isinstance(request, ssl.SSLSocket):
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)
                request.close()


class Handler(BaseHTTPRequestHandler):
    server: ExporterServer
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_SECONDS

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        scraper = self.server.scraper
        if path not in UNAUTHENTICATED_PATHS and not self._authorised():
            scraper.rejections.add("unauthorized")
            self._send(
                HTTPStatus.UNAUTHORIZED, "unauthorized\n", extra={"WWW-Authenticate": 'Basic realm="llm-exporter"'}
            )
            return
        if path == self.server.telemetry_path:
            start = time.perf_counter()
            openmetrics = wants_openmetrics(self.headers.get("Accept"))
            body = scraper.scrape(scrape_budget(self.headers.get(SCRAPE_TIMEOUT_HEADER)), openmetrics=openmetrics)
            content_type = OPENMETRICS_CONTENT_TYPE if openmetrics else CONTENT_TYPE
            compress = accepts_gzip(self.headers.get("Accept-Encoding"))
            self._send(HTTPStatus.OK, body, content_type, {"Vary": "Accept, Accept-Encoding"}, compress=compress)
            log.debug("scrape took %.1f ms", (time.perf_counter() - start) * 1000)
        elif path == "/healthz":
            self._send(HTTPStatus.OK, "ok\n")
        elif path == "/readyz":
            waiting = scraper.collectors.waiting_for()
            if not waiting:
                self._send(HTTPStatus.OK, "ready\n")
            else:  # what it waits for, never a credential: the probe's answer is public
                self._send(HTTPStatus.SERVICE_UNAVAILABLE, f"not ready: waiting for {waiting}\n")
        elif path == "/":
            landing = LANDING.format(role=scraper.role, metrics=self.server.telemetry_path)
            self._send(HTTPStatus.OK, landing, "text/html; charset=utf-8")
        else:
            self._send(HTTPStatus.NOT_FOUND, "not found\n")

    def _authorised(self) -> bool:
        auth = self.server.auth
        if auth is None:
            return True
        scheme, _, encoded = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return bool(sep) and auth.check(user, password)

    def _send(
        self,
        status: HTTPStatus,
        body: str,
        content_type: str = "text/plain; charset=utf-8",
        extra: dict[str, str] | None = None,
        *,
        compress: bool = False,
    ) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        if compress:
            data = gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in {**self.server.web.headers, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def check_telemetry_path(path: str) -> None:
    """Raises ValueError unless `path` is an absolute URL path the probes and landing page do not use."""
    if not path.startswith("/") or any(c in path for c in "?# ") or path in {"/", *UNAUTHENTICATED_PATHS}:
        raise ValueError(f"--web.telemetry-path {path!r}: expected an absolute path other than /, /healthz, /readyz")


def parse_listen(listen: str) -> tuple[str, int]:
    """ "HOST:PORT", ":PORT" or "[::1]:PORT" → (host, port). Raises ValueError."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"--web.listen-address {listen!r}: expected HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def serve(
    collectors: CollectorSet,
    role: str,
    listen: str,
    stop: threading.Event | None = None,
    web: WebConfig | None = None,
    max_connections: int = MAX_CONNECTIONS,
    *,
    telemetry_path: str = DEFAULT_TELEMETRY_PATH,
) -> None:
    """Start the collectors' background work and serve until `stop` is set (or forever)."""
    address = parse_listen(listen)
    check_telemetry_path(telemetry_path)
    server = ExporterServer(address, Scraper(collectors, role), web, max_connections, telemetry_path)
    collectors.start()
    thread = threading.Thread(target=server.serve_forever, name="http", daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    scheme = "https" if server.tls else "http"
    log.info(
        "llm-exporter %s role=%s listening on %s://%s:%d (basic auth %s)",
        __version__, role, scheme, host, port, "on" if server.auth else "off",
    )  # fmt: skip
    try:
        (stop or threading.Event()).wait()
    finally:
        server.shutdown()
        server.server_close()
        collectors.close()
