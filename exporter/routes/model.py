"""The routes in front of the engines and the timeouts they cut requests at (pure functions).

A 60 s read timeout at the ingress ends a long generation mid-stream and the user calls it a crash; a
buffering proxy turns a token stream into bursts. This reads what the route objects say:

- Ingress (ingress-nginx annotations): `nginx.ingress.kubernetes.io/proxy-read-timeout` (seconds between
  two reads from the engine; ingress-nginx's default 60 s when unset) and `.../proxy-buffering` ("on"
  buffers; ingress-nginx's default is off).
- HTTPRoute (Gateway API): `rules[].timeouts.request` (the whole request) and `.backendRequest` (one try
  at the backend); the shorter one cuts first. "0s" disables a timeout. Unset is implementation-specific:
  the configured default, or no series when none is configured.

- Route (OpenShift, `route.openshift.io/v1`): `haproxy.router.openshift.io/timeout` (HAProxy's time format:
  `30s`, `5m`, `1h`; a bare number is milliseconds); the router's default 30 s when unset. Its backends are
  `spec.to` and `spec.alternateBackends`.

A route counts when one of its backends is a Service that selects an engine pod (opted in with the
scrape annotation). Its timeout is the shortest over the rules that reach an engine.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

NGINX = "nginx.ingress.kubernetes.io/"
HAPROXY_TIMEOUT = "haproxy.router.openshift.io/timeout"
OPENSHIFT_DEFAULT_TIMEOUT_SECONDS = 30.0  # the OpenShift router's default (ROUTER_DEFAULT_SERVER_TIMEOUT)
_HAPROXY_TIME = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h|d)?")
_HAPROXY_UNIT_SECONDS = {"us": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "": 0.001}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@dataclass(frozen=True)
class Service:
    namespace: str
    name: str
    selector: tuple[tuple[str, str], ...]  # empty: selects nothing (headless/external services)


class EnginePod(Protocol):
    """What routes need of an engine pod (the cluster role's engine-pod record has more)."""

    @property
    def namespace(self) -> str: ...

    @property
    def labels(self) -> tuple[tuple[str, str], ...]: ...


@dataclass(frozen=True)
class Route:
    """One route object and the backend Services of its rules, with the timeout each rule applies."""

    kind: str  # "Ingress" or "HTTPRoute"
    namespace: str
    name: str
    rules: tuple[tuple[tuple[str, ...], float | None, str], ...]  # (services, timeout or None, source)
    buffering: bool | None  # None: not known for this kind


@dataclass(frozen=True)
class RouteTimeout:
    kind: str
    namespace: str
    name: str
    timeout_seconds: float
    source: str  # "annotation", "spec" or "default"


def parse_duration(text: str) -> float:
    """A Gateway API duration ("1h30m", "500ms", "10s") in seconds; ValueError when malformed."""
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def haproxy_timeout(text: str) -> float:
    """HAProxy's time format ("30s", "5m", "2h", "500ms"; no unit: milliseconds) in seconds; ValueError if bad."""
    found = _HAPROXY_TIME.fullmatch(text.strip())
    if not found:
        raise ValueError(f"not an HAProxy time: {text!r}")
    return float(found.group(1)) * _HAPROXY_UNIT_SECONDS[found.group(2) or ""]


def openshift_route_record(obj: Mapping[str, Any], default_timeout: float | None) -> Route:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    timeout, source = default_timeout, "default"
    # the router ignores a malformed value and keeps its default
    with contextlib.suppress(ValueError):
        if HAPROXY_TIMEOUT in annotations:
            timeout, source = haproxy_timeout(str(annotations[HAPROXY_TIMEOUT])), "annotation"
    backends = [spec.get("to") or {}, *(spec.get("alternateBackends") or [])]
    services = tuple(str(b["name"]) for b in backends if b.get("name") and b.get("kind", "Service") == "Service")
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    return Route("Route", namespace, name, ((services, timeout, source),), None)


def service_record(obj: Mapping[str, Any]) -> Service:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    selector = spec.get("selector") or {}
    return Service(str(meta.get("namespace", "")), str(meta.get("name", "")), tuple(sorted(selector.items())))


def ingress_record(obj: Mapping[str, Any], default_timeout: float | None) -> Route:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    timeout, source = default_timeout, "default"
    raw = str(annotations.get(NGINX + "proxy-read-timeout", "")).removesuffix("s")
    # ingress-nginx ignores a malformed value too and keeps its default
    if raw.isdigit():
        timeout, source = float(raw), "annotation"
    services: list[str] = []
    default_backend = (spec.get("defaultBackend") or {}).get("service") or {}
    if default_backend.get("name"):
        services.append(str(default_backend["name"]))
    for rule in spec.get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            name = ((path.get("backend") or {}).get("service") or {}).get("name")
            if name:
                services.append(str(name))
    buffering = str(annotations.get(NGINX + "proxy-buffering", "off")).lower() == "on"
    return Route(
        "Ingress",
        str(meta.get("namespace", "")),
        str(meta.get("name", "")),
        ((tuple(services), timeout, source),),
        buffering,
    )


def httproute_record(obj: Mapping[str, Any], default_timeout: float | None) -> Route:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    namespace = str(meta.get("namespace", ""))
    rules = []
    for rule in spec.get("rules") or []:
        services = tuple(
            str(ref["name"])
            for ref in rule.get("backendRefs") or []
            if ref.get("name")
            and ref.get("kind", "Service") == "Service"
            and ref.get("group", "") == ""
            and ref.get("namespace", namespace) == namespace  # cross-namespace refs need a ReferenceGrant
        )
        timeout, source = _rule_timeout(rule.get("timeouts") or {}, default_timeout)
        rules.append((services, timeout, source))
    return Route("HTTPRoute", namespace, str(meta.get("name", "")), tuple(rules), None)


def _rule_timeout(timeouts: Mapping[str, Any], default_timeout: float | None) -> tuple[float | None, str]:
    given = []
    for key in ("request", "backendRequest"):
        if key in timeouts:
            try:
                seconds = parse_duration(str(timeouts[key]))
            except ValueError:
                continue  # the CRD's validation refuses these; an old object may still hold one
            if seconds > 0:  # "0s" disables that timeout
                given.append(seconds)
    if given:
        return min(given), "spec"
    if timeouts:  # every timeout given was "0s": none applies
        return None, "spec"
    return default_timeout, "default"


def engine_services(services: Iterable[Service], pods: Iterable[EnginePod]) -> set[tuple[str, str]]:
    """(namespace, name) of every Service that selects at least one engine pod.

    The pods' label sets are taken once per namespace (the replicas of a workload share theirs), so the
    cost grows with Services times distinct label sets, not times pods."""
    labels: dict[str, list[dict[str, str]]] = {}
    for namespace, pod_labels in {(p.namespace, p.labels) for p in pods}:
        labels.setdefault(namespace, []).append(dict(pod_labels))
    return {
        (s.namespace, s.name)
        for s in services
        if s.selector and any(all(ls.get(k) == v for k, v in s.selector) for ls in labels.get(s.namespace, ()))
    }


def engine_route_timeouts(routes: Iterable[Route], engines: set[tuple[str, str]]) -> list[RouteTimeout]:
    """The shortest timeout of each route over its rules that reach an engine Service (none: left out)."""
    out = []
    for route in routes:
        reaching = [
            (timeout, source)
            for services, timeout, source in route.rules
            if timeout is not None and any((route.namespace, s) in engines for s in services)
        ]
        if reaching:
            timeout, source = min(reaching)
            out.append(RouteTimeout(route.kind, route.namespace, route.name, timeout, source))
    return sorted(out, key=lambda r: (r.namespace, r.kind, r.name))


def engine_routes(routes: Iterable[Route], engines: set[tuple[str, str]]) -> list[Route]:
    """The routes with at least one rule that reaches an engine Service."""
    return [r for r in routes if any((r.namespace, s) in engines for services, _, _ in r.rules for s in services)]
