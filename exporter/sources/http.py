"""HTTP GET with a hard deadline and a response-size cap (stdlib only), optionally with basic auth.

A socket timeout alone does not bound a slow-drip server, so every read gets the time left to the
deadline, and the body is read in chunks so an oversized body is cut off, not buffered.
"""

from __future__ import annotations

import base64
import http.client
import time
from urllib.parse import urlsplit

CHUNK = 64 * 1024


class FetchError(Exception):
    """A failed fetch; `reason` is one of: timeout, connect, http_status, too_large, protocol, credentials (a
    password file that cannot be read). `detail` never holds a credential."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def get(
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    accept: str = "text/plain",
    auth: tuple[str, str] | None = None,
    bearer: str | None = None,
) -> bytes:
    """The body of a 200 answer to GET `url`, within `timeout` seconds overall and `max_bytes`; `auth`, a
    (username, password), is sent as basic auth (an engine target's, from its URL's userinfo or a password
    file: the URL passed here carries none); `bearer`, a token, as a bearer (a gateway's key)."""
    deadline = time.monotonic() + timeout
    parts = urlsplit(url)
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn = conn_cls(parts.hostname or "", parts.port, timeout=timeout)
    headers = {"Accept": accept, "User-Agent": "llm-exporter"}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(":".join(auth).encode()).decode()
    elif bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    try:
        try:
            conn.request("GET", path, headers=headers)
            _set_timeout(conn, deadline)
            response = conn.getresponse()
        except TimeoutError as exc:
            raise FetchError("timeout", f"no answer within {timeout:g}s") from exc
        except OSError as exc:
            raise FetchError("connect", str(exc) or type(exc).__name__) from exc
        except http.client.HTTPException as exc:
            raise FetchError("protocol", str(exc) or type(exc).__name__) from exc
        if response.status != 200:
            raise FetchError("http_status", f"HTTP {response.status}")
        length = response.getheader("Content-Length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise FetchError("too_large", f"Content-Length {length} > {max_bytes}")
        return _read(conn, response, deadline, max_bytes, timeout)
    finally:
        conn.close()


def read_secret(path: str, key: str) -> str:
    """A mounted credential (the file of config key `key`), stripped of its trailing newline; a FetchError
    (reason credentials) naming the key and the file when it cannot be read, never its content."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise FetchError("credentials", f"{key} {path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from exc


def _read(
    conn: http.client.HTTPConnection,
    response: http.client.HTTPResponse,
    deadline: float,
    max_bytes: int,
    timeout: float,
) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            _set_timeout(conn, deadline)
            chunk = response.read1(CHUNK)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > max_bytes:
                raise FetchError("too_large", f"body larger than {max_bytes} bytes")
            chunks.append(chunk)
    except TimeoutError as exc:
        raise FetchError("timeout", f"body not complete within {timeout:g}s") from exc
    except http.client.HTTPException as exc:
        raise FetchError("protocol", str(exc) or type(exc).__name__) from exc
    except OSError as exc:
        raise FetchError("connect", str(exc) or type(exc).__name__) from exc


def _set_timeout(conn: http.client.HTTPConnection, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    if conn.sock is not None:
        conn.sock.settimeout(left)
