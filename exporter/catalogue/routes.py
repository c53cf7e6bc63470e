"""Route metrics (cluster role): the timeouts and buffering of the Ingresses and HTTPRoutes in front of engines."""

from __future__ import annotations

from functools import partial

from exporter.catalogue.spec import MetricSpec, Stability, gauge

ROUTE = ("namespace", "route", "kind")

_g = partial(gauge, subsystem="cluster", role="cluster", stability=Stability.EXPERIMENTAL)

ROUTE_TIMEOUT = _g(
    "llm_route_timeout_seconds",
    "The shortest timeout an Ingress, HTTPRoute or OpenShift Route applies to requests it sends to an engine "
    "Service (source: annotation, spec, or the configured default when unset). Longer generations are cut.",
    (*ROUTE, "source"),
    unit="seconds",
)
ROUTE_BUFFERING = _g(
    "llm_route_buffering",
    "1 when the route's proxy buffers engine responses (ingress-nginx proxy-buffering on): a token stream "
    "reaches the user in bursts.",
    ROUTE,
)

METRICS: tuple[MetricSpec, ...] = (ROUTE_TIMEOUT, ROUTE_BUFFERING)
