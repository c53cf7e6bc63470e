"""A loopback fake of the Kubernetes API server: list + watch for the few resources the exporter reads.

It speaks the real wire protocol, so the real `kubernetes` client (and our reflector on top of it) runs
unmodified against it:

- resources: `nodes`, `pods` (all namespaces and `/namespaces/{ns}/pods`), `resource.k8s.io/v1`
  `resourceslices`, `resourceclaims` (all namespaces and namespaced) and `deviceclasses`;
- list: `limit`/`continue` pagination over a consistent snapshot, `metadata.resourceVersion`, an expired
  continue token (after `compact()`) answers `410 Expired`;
- watch: a chunked stream of `{"type", "object"}` lines from a resourceVersion, `allowWatchBookmarks`
  (a BOOKMARK every `bookmark_interval` seconds of quiet), `timeoutSeconds`, an ERROR event with a
  `410 Gone` Status when the resourceVersion is older than the last compaction; `resourceVersion` "" or
  "0" starts with synthetic ADDED events for every object;
- `fieldSelector` (`a.b=v`, `a.b==v`, `a.b!=v`, comma-joined) and `labelSelector` (`k=v`, `k!=v`, `k`,
  `!k`, `k in (a,b)`, `k notin (a,b)`); an object that starts or stops matching a watch's selector
  arrives as ADDED or DELETED, as the real watch cache does.

Python API for tests (thread-safe):

    api = FakeKubeAPI(bookmark_interval=0.2)   # port=0: pick a free loopback port
    api.start(); api.write_kubeconfig(path)    # a kubeconfig pointing at http://127.0.0.1:<port>
    api.apply(obj)                             # create or replace (by kind, namespace, name): ADDED/MODIFIED
    api.delete("pods", "ns", "name")           # DELETED
    api.compact()                              # forget history: older resourceVersions get 410
    api.drop_watches()                         # cut every open watch stream mid-flight
    api.fail_next(3, status=500)               # the next 3 requests answer a Status error
    api.stop(); api.start()                    # the API server down and back, same port, state kept
    api.requests                               # every request line served, for assertions

Objects are stored as given (real-shaped dicts); `apply` fills `metadata.uid`, `resourceVersion` and
`creationTimestamp`. Each object is serialised once at `apply`, so large lists (the scale benchmark) are
cheap to serve.
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

# plural -> (group path prefix, apiVersion, kind, namespaced)
RESOURCES: dict[str, tuple[str, str, str, bool]] = {
    "nodes": ("/api/v1", "v1", "Node", False),
    "pods": ("/api/v1", "v1", "Pod", True),
    "configmaps": ("/api/v1", "v1", "ConfigMap", True),  # the watchdog's dashboards
    "resourceslices": ("/apis/resource.k8s.io/v1", "resource.k8s.io/v1", "ResourceSlice", False),
    "resourceclaims": ("/apis/resource.k8s.io/v1", "resource.k8s.io/v1", "ResourceClaim", True),
    "deviceclasses": ("/apis/resource.k8s.io/v1", "resource.k8s.io/v1", "DeviceClass", False),
}
KIND_TO_RESOURCE = {kind: plural for plural, (_, _, kind, _) in RESOURCES.items()}
_PATH = re.compile(r"^(/api/v1|/apis/resource\.k8s\.io/v1)(?:/namespaces/([^/]+))?/([a-z]+)$")

Obj = dict[str, Any]
Selector = Callable[[Obj], bool]


class _Event:
    __slots__ = ("new", "old", "resource", "rv", "type")

    def __init__(self, rv: int, type_: str, resource: str, new: Obj, old: Obj | None) -> None:
        self.rv, self.type, self.resource, self.new, self.old = rv, type_, resource, new, old


def status(code: int, reason: str, message: str) -> Obj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _field(obj: Obj, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def parse_field_selector(text: str) -> Selector:
    terms = []
    for term in filter(None, text.split(",")):
        match = re.fullmatch(r"([\w.]+)\s*(!=|==|=)\s*(.*)", term)
        if not match:
            raise ValueError(f"invalid field selector term {term!r}")
        terms.append((match[1], match[2] == "!=", match[3]))
    return lambda obj: all((_field(obj, p) == v) != negate for p, negate, v in terms)


def _label_check(term: str) -> Callable[[dict[str, str]], bool]:
    if m := re.fullmatch(r"([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)", term):
        key, values, inside = m[1], {v.strip() for v in m[3].split(",")}, m[2] == "in"
        return lambda labels: (labels.get(key) in values) == inside
    if m := re.fullmatch(r"([\w./-]+)\s*(!=|==|=)\s*([\w./-]*)", term):
        key, negate, value = m[1], m[2] == "!=", m[3]
        return lambda labels: (labels.get(key) == value) != negate
    if m := re.fullmatch(r"(!?)([\w./-]+)", term):
        key, absent = m[2], m[1] == "!"
        return lambda labels: (key in labels) != absent
    raise ValueError(f"invalid label selector term {term!r}")


def parse_label_selector(text: str) -> Selector:
    checks = [_label_check(raw.strip()) for raw in re.findall(r"[^,(]+(?:\([^)]*\))?", text)]
    return lambda obj: all(check(obj.get("metadata", {}).get("labels") or {}) for check in checks)


class FakeKubeAPI:
    def __init__(self, *, port: int = 0, bookmark_interval: float | None = None) -> None:
        self.bookmark_interval = bookmark_interval
        self.delay_seconds = 0.0  # injected latency before every answer: a slow, overloaded API server
        self.requests: list[str] = []
        self._port = port
        self._cond = threading.Condition()
        self._objects: dict[str, dict[tuple[str, str], tuple[Obj, bytes]]] = {r: {} for r in RESOURCES}
        self._events: list[_Event] = []
        self._event_rvs: list[int] = []
        self._rv = 1000
        self._compacted_rv = 0
        self._snapshots: dict[str, tuple[int, list[bytes]]] = {}  # continue token id -> (rv, items)
        self._failures: list[tuple[int, str]] = []
        self._watch_sockets: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> FakeKubeAPI:
        handler = type("Handler", (_Handler,), {"api": self})
        server = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        server.daemon_threads = True
        self._port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """The API server goes away: the listener closes and every open stream is cut."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.drop_watches()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def write_kubeconfig(self, path: str | Path) -> str:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "fake-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        }
        Path(path).write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
        return str(path)

    # -- state ---------------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    def apply(self, obj: Obj) -> Obj:
        resource = KIND_TO_RESOURCE[obj["kind"]]
        meta = obj.setdefault("metadata", {})
        key = (meta.get("namespace", ""), meta["name"])
        with self._cond:
            self._rv += 1
            previous = self._objects[resource].get(key)
            meta.setdefault("uid", previous[0]["metadata"]["uid"] if previous else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
            meta["resourceVersion"] = str(self._rv)
            self._objects[resource][key] = (obj, json.dumps(obj, separators=(",", ":")).encode())
            self._record(
                _Event(self._rv, "MODIFIED" if previous else "ADDED", resource, obj, previous[0] if previous else None)
            )
        return obj

    def delete(self, resource: str, namespace: str, name: str) -> None:
        with self._cond:
            obj, _ = self._objects[resource].pop((namespace, name))
            self._rv += 1
            gone = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._rv)}}
            self._record(_Event(self._rv, "DELETED", resource, gone, obj))

    def _record(self, event: _Event) -> None:
        self._events.append(event)
        self._event_rvs.append(event.rv)
        self._cond.notify_all()

    def compact(self) -> None:
        """etcd compaction: every resourceVersion and continue token issued so far now answers 410."""
        with self._cond:
            self._rv += 1
            self._compacted_rv = self._rv
            self._events.clear()
            self._event_rvs.clear()
            self._snapshots.clear()

    def drop_watches(self) -> None:
        with self._cond:
            sockets = list(self._watch_sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def fail_next(self, count: int, status: int = 500, path_contains: str = "") -> None:
        with self._cond:
            self._failures.extend([(status, path_contains)] * count)

    def take_failure(self, path: str) -> int | None:
        with self._cond:
            for i, (code, needle) in enumerate(self._failures):
                if needle in path:
                    del self._failures[i]
                    return code
        return None

    # -- list / watch --------------------------------------------------------------------------------
    def list_page(self, resource: str, match: Selector, limit: int, token: str) -> tuple[int, list[bytes], str]:
        with self._cond:
            if token:
                ident, offset = json.loads(base64.b64decode(token))
                if ident not in self._snapshots:
                    raise _GoneError(
                        "Expired",
                        "The provided continue parameter is too old to display a "
                        "consistent list result. You can start a new list without the continue "
                        "parameter.",
                    )
                rv, items = self._snapshots[ident]
            else:
                rv, offset = self._rv, 0
                items = [raw for _, (obj, raw) in sorted(self._objects[resource].items()) if match(obj)]
                ident = uuid.uuid4().hex
            end = offset + limit if limit else len(items)
            page, next_token = items[offset:end], ""
            if end < len(items):
                self._snapshots[ident] = (rv, items)
                next_token = base64.b64encode(json.dumps([ident, end]).encode()).decode()
            else:
                self._snapshots.pop(ident, None)
            return rv, page, next_token

    def watch_events(
        self, resource: str, match: Selector, since: int, deadline: float, emit: Callable[[str, Obj], None]
    ) -> None:
        """Stream events after `since` until `deadline`; raises _GoneError when `since` was compacted."""
        last_sent = time.monotonic()
        with self._cond:
            if since < self._compacted_rv:
                raise _GoneError("Expired", f"too old resource version: {since} ({self._compacted_rv})")
            if since == 0:
                for obj, _ in sorted(self._objects[resource].values(), key=lambda o: o[0]["metadata"]["name"]):
                    if match(obj):
                        emit("ADDED", obj)
                since = self._rv
            cursor_rv = since
        while (now := time.monotonic()) < deadline:
            with self._cond:
                if bisect.bisect_right(self._event_rvs, cursor_rv) == len(self._events):  # nothing new: wait
                    wait = deadline - now
                    if self.bookmark_interval:
                        wait = min(wait, self.bookmark_interval - (now - last_sent))
                    if wait > 0:
                        self._cond.wait(min(wait, 0.5))
                if cursor_rv < self._compacted_rv:  # compacted under us: the real server ends with 410
                    raise _GoneError("Expired", f"too old resource version: {cursor_rv} ({self._compacted_rv})")
                pending = self._events[bisect.bisect_right(self._event_rvs, cursor_rv) :]
                current_rv = self._rv
            for event in pending:
                cursor_rv = event.rv
                if event.resource != resource:
                    continue
                was = event.old is not None and event.type != "ADDED" and match(event.old)
                now_matches = event.type != "DELETED" and match(event.new)
                if now_matches and was:
                    emit("MODIFIED", event.new)
                elif now_matches:
                    emit("ADDED", event.new)
                elif was:
                    emit("DELETED", event.new)
                else:
                    continue
                last_sent = time.monotonic()
            if self.bookmark_interval and time.monotonic() - last_sent >= self.bookmark_interval:
                cursor_rv = max(cursor_rv, current_rv)
                emit("BOOKMARK", {"metadata": {"resourceVersion": str(cursor_rv)}})
                last_sent = time.monotonic()

    @property
    def active_watches(self) -> int:
        """Watch streams open now (a request is logged before its stream is registered)."""
        with self._cond:
            return len(self._watch_sockets)

    def register_watch(self, sock: socket.socket, active: bool) -> None:
        with self._cond:
            (self._watch_sockets.add if active else self._watch_sockets.discard)(sock)


class _GoneError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class _Handler(BaseHTTPRequestHandler):
    api: FakeKubeAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self.api.requests.append(self.path)
        if self.api.delay_seconds:
            time.sleep(self.api.delay_seconds)
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        match = _PATH.match(parts.path)
        if not match or match[3] not in RESOURCES or RESOURCES[match[3]][0] != match[1]:
            return self._json(404, status(404, "NotFound", f"the server could not find {parts.path}"))
        if (code := self.api.take_failure(self.path)) is not None:
            return self._json(code, status(code, "InternalError" if code >= 500 else "Forbidden", "injected"))
        resource, namespace = match[3], match[2]
        try:
            field = parse_field_selector(query.get("fieldSelector", ""))
            label = parse_label_selector(query.get("labelSelector", ""))
        except ValueError as exc:
            return self._json(400, status(400, "BadRequest", str(exc)))

        def selected(obj: Obj) -> bool:
            in_ns = namespace is None or obj["metadata"].get("namespace") == namespace
            return in_ns and field(obj) and label(obj)

        if query.get("watch") in ("true", "1"):
            return self._watch(resource, selected, query)
        try:
            rv, page, token = self.api.list_page(
                resource, selected, int(query.get("limit") or 0), query.get("continue", "")
            )
        except _GoneError as exc:
            return self._json(410, status(410, exc.reason, str(exc)))
        _, api_version, kind, _ = RESOURCES[resource]
        meta = {"resourceVersion": str(rv), **({"continue": token} if token else {})}
        head = json.dumps({"kind": f"{kind}List", "apiVersion": api_version, "metadata": meta})[:-1]
        body = b"".join((head.encode(), b',"items":[', b",".join(page), b"]}"))
        self._send(200, body)

    def _watch(self, resource: str, selected: Selector, query: dict[str, str]) -> None:
        _, api_version, kind, _ = RESOURCES[resource]
        timeout = float(query.get("timeoutSeconds") or 1800)
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def emit(type_: str, obj: Obj) -> None:
            if type_ == "BOOKMARK":
                if not bookmarks:
                    return
                obj = {"kind": kind, "apiVersion": api_version, **obj}
            line = json.dumps({"type": type_, "object": obj}, separators=(",", ":")).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()

        self.api.register_watch(self.connection, True)
        try:
            since = int(query.get("resourceVersion") or 0)
            try:
                self.api.watch_events(resource, selected, since, time.monotonic() + timeout, emit)
            except _GoneError as exc:
                emit("ERROR", status(410, exc.reason, str(exc)))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        finally:
            self.api.register_watch(self.connection, False)

    def _json(self, code: int, body: Obj) -> None:
        self._send(code, json.dumps(body).encode())

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
