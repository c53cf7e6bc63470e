"""The demo's served rename: a loopback proxy in front of the real vLLM server.

GETs (/metrics, /version) are answered with the engine's own responses; once `rename` is called, /metrics
serves the engine's body with the given metric names replaced, as an engine upgrade that renames a series
would. Everything that scrapes the engine through the proxy (the exporter, Prometheus) sees the change on
its next scrape, the way a user's Prometheus would.
"""

from __future__ import annotations

import re
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def renamed(body: str, renames: Mapping[str, str]) -> str:
    """`body` (text exposition) with each metric name in `renames` replaced, in samples and HELP/TYPE lines."""
    for old, new in renames.items():
        # whole names only: followed by a label block, a space or the end of the line
        body = re.sub(rf"(?m)(^|^# (?:HELP|TYPE) ){re.escape(old)}(?=[{{ ]|$)", rf"\g<1>{new}", body)
    return body


class RenamingProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.renames: dict[str, str] = {}  # replaced whole: handler threads see one mapping or the next
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                try:
                    with urllib.request.urlopen(proxy.upstream + self.path, timeout=10) as response:
                        status, ctype, data = response.status, response.headers.get("Content-Type"), response.read()
                except urllib.error.HTTPError as exc:
                    status, ctype, data = exc.code, exc.headers.get("Content-Type"), exc.read()
                except OSError as exc:
                    status, ctype, data = 502, "text/plain", f"engine unreachable: {exc}\n".encode()
                if self.path.split("?")[0] == "/metrics" and status == 200 and proxy.renames:
                    data = renamed(data.decode(), proxy.renames).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype or "text/plain")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    # the scraper gave up first (its deadline): nothing to tell the person watching the demo
                    return

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def rename(self, renames: Mapping[str, str]) -> None:
        self.renames = dict(renames)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
