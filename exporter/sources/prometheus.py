"""A small client for the Prometheus HTTP API (instant queries and label values), on the standard library.

Only this module talks to Prometheus; `exporter.check.evaluate` depends on the `Prometheus` protocol, so its
logic can be tested against a real server and, where that is overkill, a fake.

Behind Thanos Query (or another store that fans out), two things differ from one Prometheus:
- a store that fails leaves its series out of an answer that still succeeds, with a warning: every query asks
  for no partial responses (`partial_response=false`, which Prometheus ignores), and an answer that still
  carries a store's warning, or an error from a store, raises `PartialResponseError` naming the store, so a
  missing cluster is never read as an empty result;
- the same series from two Prometheus replicas differs only in a replica label: with `replica_labels` the
  client asks Thanos to deduplicate on them (`dedup=true`, `replicaLabels[]`, which override Query's own
  `--query.replica-label`) and drops them from what it returns, two series left the same then being one.
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any, Protocol

from exporter.sources import tls

DEFAULT_TIMEOUT_SECONDS = 30.0


class PrometheusError(Exception):
    """The server could not be reached, or answered with an error (e.g. a PromQL syntax error).

    `status`: the HTTP status of the answer, 0 when there was none (unreachable, timeout, unreadable file).
    """

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class PartialResponseError(PrometheusError):
    """A store behind Thanos Query did not answer: the result would lack its series. `part` names the store
    (its address and external labels, as Thanos reports them)."""

    def __init__(self, message: str, part: str) -> None:
        super().__init__(message)
        self.part = part


# what Thanos says of a store that failed (pkg/store/proxy*.go), in a warning or, without partial responses,
# in the error: one that answered with an error, one that cannot be dialled ("fetch series for"), none at all;
# PromQL's own warnings and infos ("PromQL warning: ...") say nothing of missing data
_STORE_FAILED = re.compile(
    r"receive series from|fetch series for|failed to receive any data|No StoreAPIs matched", re.I
)
_STORE = re.compile(r"Addr: (?P<addr>\S+)(?: LabelSets: (?P<labels>.*?))?(?= Mint| MinTime| MaxTime|: rpc|$)")


def missing_part(message: str) -> str:
    """The failed store of a Thanos error or warning: `127.0.0.1:10901 {cluster="c"}`, else the message."""
    m = _STORE.search(message)
    if m is None:
        return message
    return f"{m['addr']} {m['labels']}".strip() if m["labels"] else m["addr"]


def _partial(messages: Sequence[str]) -> PartialResponseError | None:
    failed = [str(m) for m in messages if _STORE_FAILED.search(str(m))]
    if not failed:
        return None
    parts = ", ".join(dict.fromkeys(missing_part(m) for m in failed))
    return PartialResponseError(f"partial response: no answer from {parts}: {failed[0]}", parts)


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
        replica_labels: Sequence[str] = (),
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
        self.replica_labels = tuple(replica_labels)

    def _call(self, path: str, form: list[tuple[str, str]] | None = None) -> Any:
        url = f"{self.base_url}{path}"
        try:
            data = urllib.parse.urlencode(form).encode() if form is not None else None  # POST: long queries fit
            request = urllib.request.Request(url, data=data, headers=self._headers)
        except UnicodeEncodeError as exc:  # a byte of argv that is no UTF-8 (a surrogate): no query can carry it
            raise PrometheusError(f"a query with {exc.object[exc.start : exc.end]!r}, which is not UTF-8 text") from exc
        except ValueError as exc:  # "http://[::1": no URL
            raise PrometheusError(f"{self.base_url}: not a URL ({exc})") from exc
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
            if (partial := _partial([str(error)])) is not None:
                raise partial
            raise PrometheusError(str(error), status)
        warnings = body.get("warnings")
        if isinstance(warnings, list) and (partial := _partial(warnings)) is not None:
            raise partial
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query, evaluated now or at `at` (Unix seconds)."""
        # Thanos Query answers with the stores that did answer when another fails, and a warning: a
        # cluster's series missing from it would read as an empty query. partial_response=false makes it
        # an error instead (Prometheus ignores the parameter).
        form = [("query", expr), ("partial_response", "false"), *self._dedup()]
        if at is not None:
            form.append(("time", f"{at:.3f}"))
        data = self._call("/api/v1/query", form)
        if data.get("resultType") in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result = data.get("result", [])
        return without_replicas(result, self.replica_labels) if isinstance(result, list) else []

    def label_values(self, label: str) -> list[str]:
        query = [("partial_response", "false"), *self._dedup()]
        try:
            path = f"/api/v1/label/{urllib.parse.quote(label)}/values?{urllib.parse.urlencode(query)}"
        except UnicodeEncodeError as exc:
            raise PrometheusError(f"a label with {exc.object[exc.start : exc.end]!r}, which is not UTF-8 text") from exc
        data = self._call(path)
        return [str(v) for v in data] if isinstance(data, list) else []

    def _dedup(self) -> list[tuple[str, str]]:
        if not self.replica_labels:
            return []  # Thanos Query's own --query.replica-label applies (and deduplication is its default)
        return [("dedup", "true"), *(("replicaLabels[]", label) for label in self.replica_labels)]


def without_replicas(result: list[dict[str, Any]], replica_labels: Sequence[str]) -> list[dict[str, Any]]:
    """An instant vector with the replica labels dropped; series then alike are one (the first answered)."""
    if not replica_labels:
        return result
    out: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    for series in result:
        metric = {k: v for k, v in (series.get("metric") or {}).items() if k not in replica_labels}
        out.setdefault(tuple(sorted(metric.items())), {**series, "metric": metric})
    return list(out.values())


def _error_body(exc: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(exc.read() or b"{}")
    except ValueError:
        return {"status": "error", "error": f"HTTP {exc.code} {exc.reason}"}


def tls_context(
    ca_file: str = "", insecure_skip_verify: bool = False, key: str = "cluster.watchdog.prometheus.tls.ca_file"
) -> ssl.SSLContext | None:
    """The TLS settings of a Prometheus behind https: a private CA, or (for tests only) no verification.
    `key` names where `ca_file` was configured (the watchdog's key, its one user), for the error."""
    if not ca_file and not insecure_skip_verify:
        return None
    try:
        if ca_file:  # a first load that names the key and file on failure, as create_default_context does not
            tls.load_ca(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), key, ca_file)
        context = ssl.create_default_context(cafile=ca_file or None)  # that CA alone, as before
    except tls.TlsFileError as exc:
        raise PrometheusError(str(exc)) from exc
    except (OSError, ssl.SSLError) as exc:  # the file changed in between
        raise PrometheusError(f"{key} {ca_file}: cannot load: {exc}") from exc
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
