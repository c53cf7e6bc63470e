"""A small client for the Prometheus HTTP API (instant queries and label values), on the standard library.

Only this module talks to Prometheus; `exporter.check.evaluate` depends on the `Prometheus` protocol, so its
logic can be tested against a real server and, where that is overkill, a fake.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Protocol

DEFAULT_TIMEOUT_SECONDS = 30.0


class PrometheusError(Exception):
    """The server could not be reached, or answered with an error (e.g. a PromQL syntax error).

    `status`: the HTTP status of the answer, 0 when there was none (unreachable, timeout, unreadable file).
    """

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Prometheus(Protocol):
    def query(self, expr: str) -> list[dict[str, Any]]:
        """The result of an instant query: a list of {"metric": {...}, "value": [t, "v"]} (scalars wrapped)."""
        ...

    def label_values(self, label: str) -> list[str]: ...


class HttpPrometheus:
    def __init__(
        self,
        base_url: str,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        bearer_token: str = "",
        *,
        basic_auth: tuple[str, str] | None = None,
        context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise PrometheusError(f"{base_url!r} is not an http(s) URL")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else {}
        if basic_auth is not None:
            pair = base64.b64encode(":".join(basic_auth).encode()).decode()
            self._headers = {"Authorization": f"Basic {pair}"}
        self._context = context

    def _call(self, path: str, form: dict[str, str] | None = None) -> Any:
        url = f"{self.base_url}{path}"
        data = urllib.parse.urlencode(form).encode() if form is not None else None  # POST: long queries fit
        request = urllib.request.Request(url, data=data, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._context) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:  # 400/422 carry a JSON error body: the PromQL error
            body = _error_body(exc)
            status = exc.code
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PrometheusError(f"cannot reach {self.base_url}: {reason}") from exc
        except ValueError as exc:
            raise PrometheusError(f"{url}: not a Prometheus API response") from exc
        else:
            status = 200
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error") if isinstance(body, dict) else None
            if not error:  # a proxy's 401/403 page, or an empty body: the status says it all
                error = f"{url}: HTTP {status}" if status != 200 else "unexpected response"
            raise PrometheusError(str(error), status)
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query, evaluated now or at `at` (Unix seconds)."""
        # Thanos Query answers with the stores that did answer when another fails, and a warning: a
        # cluster's series missing from it would read as an empty query. partial_response=false makes it
        # an error instead (Prometheus ignores the parameter).
        form = {"query": expr, "partial_response": "false"}
        if at is not None:
            form["time"] = f"{at:.3f}"
        data = self._call("/api/v1/query", form)
        if data.get("resultType") in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result = data.get("result", [])
        return result if isinstance(result, list) else []

    def label_values(self, label: str) -> list[str]:
        data = self._call(f"/api/v1/label/{urllib.parse.quote(label)}/values")
        return [str(v) for v in data] if isinstance(data, list) else []


def _error_body(exc: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(exc.read() or b"{}")
    except ValueError:
        return {"status": "error", "error": f"HTTP {exc.code} {exc.reason}"}


def tls_context(ca_file: str = "", insecure_skip_verify: bool = False) -> ssl.SSLContext | None:
    """The TLS settings of a Prometheus behind https: a private CA, or (for tests only) no verification."""
    if not ca_file and not insecure_skip_verify:
        return None
    try:
        context = ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError) as exc:
        raise PrometheusError(f"tls.ca_file {ca_file}: cannot load: {exc}") from exc
    if insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def read_secret(path: str, what: str) -> str:
    """A mounted credential (token or password file), stripped of its trailing newline."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise PrometheusError(f"{what} {path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from exc
