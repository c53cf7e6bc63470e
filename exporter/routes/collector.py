"""The routes collector (cluster role): Ingresses, HTTPRoutes, Services and engine pods, watched, and GKE's
BackendConfigs for the timeouts of GKE Ingresses.

Ingresses, HTTPRoutes, Services and BackendConfigs are optional (the Gateway API's and GKE's CRDs may not be
installed, RBAC may not grant them after an upgrade): a 403 or 404 counts as none, so routes never hold back
the cluster view; BackendConfigs not seen leave the GKE Ingresses whose Services name one without a timeout.
The engine pods ("pods") come from the engine-pod view it shares with the replicas collector
(`exporter.replicas.engine_pods`). The families are computed again only after a watch event changed one
of the records they are made of, and served from that result at every scrape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from exporter.catalogue import routes as spec
from exporter.config import Routes
from exporter.exposition import Family
from exporter.k8s import frontends
from exporter.k8s.frontends import Frontend
from exporter.routes import model
from exporter.sources.kube_mirror import Mirror, Reflectors
from exporter.sources.kube_shared import shared
from exporter.watched import Recomputed, Watching


def make_reflectors(api: Any, config: Routes, page_size: int = 500) -> dict[str, Mirror[Any]]:
    """The route objects' reflectors; the engine pods ("pods") come from the shared engine-pod watch."""
    defaults = model.defaults(
        config.ingress_default_timeout_seconds,
        config.httproute_default_timeout_seconds,
        config.openshift_route_default_timeout_seconds,
    )
    return {
        # views of the role's one watch of each resource (the audit reads them too); optional: an API group not
        # served, or a grant missing after an upgrade, leaves the routes empty (and says so in the logs)
        # instead of holding back the cluster role's readiness
        "ingresses": shared(api, "ingresses", optional=True, page_size=page_size).view(
            lambda o: frontends.ingress(o, defaults=defaults)
        ),
        "httproutes": shared(api, "httproutes", optional=True, page_size=page_size).view(
            lambda o: frontends.httproute(o, defaults=defaults)
        ),
        "services": shared(api, "services", optional=True, page_size=page_size).view(model.service_record),
        # OpenShift Routes (route.openshift.io): absent outside OpenShift, a 404 counts as none
        "routes": shared(api, "routes", optional=True, page_size=page_size).view(
            lambda o: frontends.openshift_route(o, defaults=defaults)
        ),
        # GKE's BackendConfigs (cloud.google.com): the timeout of a GKE Ingress's backend whose Service names one;
        # absent outside GKE: unavailable, such a route has no timeout series
        "backendconfigs": shared(api, "backendconfigs", optional=True, page_size=page_size).view(
            lambda o: frontends.backend_config(frontends.backend_config_kept(o))
        ),
    }


class RoutesCollector(Watching):
    name = "routes"

    def __init__(self, reflectors: Mapping[str, Mirror[Any]]) -> None:
        self._reflectors = Reflectors(reflectors)
        self._families = Recomputed(self._compute)
        self.listen_all(self._families.mark_dirty)

    def collect(self) -> Iterable[Family]:
        self.wait_for_first_lists()
        return self._families.get()

    def _compute(self) -> list[Family]:
        items = {name: r.values() for name, r in self._reflectors.items()}
        engines = model.engine_services(items["services"], items["pods"])
        routes = [*items["ingresses"], *items["httproutes"], *items.get("routes", ())]
        configs = self._reflectors.get("backendconfigs")
        seen = items["backendconfigs"] if configs is not None and configs.available() else None
        timeouts = model.engine_route_timeouts(routes, engines, seen)
        return families(timeouts, model.engine_routes(routes, engines))


def families(timeouts: Iterable[model.RouteTimeout], routes: Iterable[Frontend]) -> list[Family]:
    timeout = Family(spec.ROUTE_TIMEOUT)
    for t in timeouts:
        timeout.add((t.namespace, t.name, t.kind, t.source), t.timeout_seconds)
    buffering = Family(spec.ROUTE_BUFFERING)
    for r in routes:
        if r.buffering is not None:
            buffering.add((r.namespace, r.name, r.kind), 1.0 if r.buffering else 0.0)
    return [timeout, buffering]
