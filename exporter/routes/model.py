"""The routes in front of the engines and the timeouts they cut requests at (pure functions).

A 60 s read timeout at the ingress ends a long generation mid-stream and the user calls it a crash; a
buffering proxy turns a token stream into bursts. What each Ingress (per controller), HTTPRoute and
OpenShift Route sets is read by `exporter.k8s.frontends`, the audit's reading too; here the routes are
joined to the engines.

Where an object sets no timeout, the controller's default applies. For the controllers whose default is
the cluster's own setting (ingress-nginx's and F5 NGINX's ConfigMap, an Ingress of a controller not
recognised, the OpenShift router, a Gateway implementation), the configured default stands in for it
(`cluster.routes.*_default_timeout_seconds`; 0: no series); AWS ALB's idle timeout (60 s) and GKE's
backend service timeout (30 s, or the timeoutSec of the BackendConfig the Service names) are the load
balancers' own.

A route counts when one of its backends is a Service that selects an engine pod (opted in with the
scrape annotation). Its timeout is the shortest over the rules that reach an engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from exporter.k8s import frontends
from exporter.k8s.fields import as_dict, meta, strs
from exporter.k8s.frontends import Frontend

_CONFIGURED = {
    "ingress": (frontends.INGRESS_NGINX, frontends.NGINX_INC, frontends.UNKNOWN),
    "httproute": (frontends.GATEWAY,),
    "openshift": (frontends.OPENSHIFT,),
}


@dataclass(frozen=True)
class Service:
    namespace: str
    name: str
    selector: tuple[tuple[str, str], ...]  # empty: selects nothing (headless/external services)
    backend_config: str | None = None  # GKE: the BackendConfig annotation, as written


class EnginePod(Protocol):
    """What routes need of an engine pod (the cluster role's engine-pod record has more)."""

    @property
    def namespace(self) -> str: ...

    @property
    def labels(self) -> tuple[tuple[str, str], ...]: ...


BackendConfig = tuple[str, str, float | None]  # GKE: (namespace, name, timeoutSec), `frontends.backend_config`


@dataclass(frozen=True)
class RouteTimeout:
    kind: str
    namespace: str
    name: str
    timeout_seconds: float
    source: str  # "annotation", "spec" or "default"


def defaults(ingress: float, httproute: float, openshift: float) -> dict[str, float | None]:
    """The controllers' defaults with the configured ones in place of the cluster's own settings (0: none)."""
    configured = {"ingress": ingress, "httproute": httproute, "openshift": openshift}
    out = dict(frontends.DOCUMENTED)
    for group, controllers in _CONFIGURED.items():
        for controller in controllers:
            out[controller] = configured[group] or None
    return out


def service_record(obj: Mapping[str, Any]) -> Service:
    namespace, name, _, annotations = meta(obj, "")
    selector = strs(as_dict(obj.get("spec")).get("selector"))
    return Service(namespace, name, tuple(sorted(selector.items())), frontends.backend_config_ref(annotations))


def engine_services(services: Iterable[Service], pods: Iterable[EnginePod]) -> dict[tuple[str, str], Service]:
    """Every Service that selects at least one engine pod, by (namespace, name).

    The pods' label sets are taken once per namespace (the replicas of a workload share theirs), so the
    cost grows with Services times distinct label sets, not times pods."""
    labels: dict[str, list[dict[str, str]]] = {}
    for namespace, pod_labels in {(p.namespace, p.labels) for p in pods}:
        labels.setdefault(namespace, []).append(dict(pod_labels))
    return {
        (s.namespace, s.name): s
        for s in services
        if s.selector and any(all(ls.get(k) == v for k, v in s.selector) for ls in labels.get(s.namespace, ()))
    }


def _targets(route: Frontend, engines: Mapping[tuple[str, str], Service]) -> set[tuple[str, str]]:
    return {("Service", b.name) for rule in route.rules for b in rule.backends if (route.namespace, b.name) in engines}


def engine_route_timeouts(
    routes: Iterable[Frontend],
    engines: Mapping[tuple[str, str], Service],
    backend_configs: Iterable[BackendConfig] | None = None,
) -> list[RouteTimeout]:
    """The shortest timeout of each route over its backends that are engine Services; a route with none known
    (or none at all: "0s") is left out. `backend_configs`: GKE's BackendConfigs as `frontends.backend_config`
    reads them; None where they cannot be seen (not served, not granted): a Service that names one then has a
    timeout that cannot be told."""
    refs: dict[str, dict[str, str | None]] = {}
    for (namespace, name), service in engines.items():
        refs.setdefault(namespace, {})[name] = service.backend_config
    configs: dict[str, dict[str, float | None]] | None = None
    if backend_configs is not None:
        configs = {}
        for namespace, name, seconds in backend_configs:
            configs.setdefault(namespace, {})[name] = seconds
    out = []
    for route in routes:
        seen = None if configs is None else configs.get(route.namespace, {})
        known = [
            t
            for t in frontends.reaching_timeouts(route, _targets(route, engines), refs.get(route.namespace), seen)
            if t is not None and t.seconds != frontends.NO_TIMEOUT
        ]
        if known:
            shortest = min(known, key=lambda t: (t.seconds, t.source))
            out.append(RouteTimeout(route.kind, route.namespace, route.name, shortest.seconds, shortest.source))
    return sorted(out, key=lambda r: (r.namespace, r.kind, r.name))


def engine_routes(routes: Iterable[Frontend], engines: Mapping[tuple[str, str], Service]) -> list[Frontend]:
    """The routes with at least one backend that is an engine Service."""
    return [r for r in routes if _targets(r, engines)]
