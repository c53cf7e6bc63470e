"""The read timeout and response buffering of an Ingress, HTTPRoute or OpenShift Route (pure).

- ingress-nginx (annotations `nginx.ingress.kubernetes.io/*`, or class `nginx`): `proxy-read-timeout`
  (default 60 s), `proxy-buffering` (default off);
- F5 NGINX Ingress Controller (`nginx.org/*`): `nginx.org/proxy-read-timeout` (default 60 s),
  `nginx.org/proxy-buffering` (default on);
- AWS Load Balancer Controller (class `alb`, `alb.ingress.kubernetes.io/*`): `idle_timeout.timeout_seconds`
  in `load-balancer-attributes` (default 60 s);
- OpenShift Route: `haproxy.router.openshift.io/timeout` (default 30 s; bare numbers are milliseconds);
- HTTPRoute: each rule's `timeouts.request` (unset: the implementation's, unknown here).
"""

from __future__ import annotations

import re

from exporter.audit.model import Frontend, duration_seconds
from exporter.routes.model import OPENSHIFT_DEFAULT_TIMEOUT_SECONDS, haproxy_timeout

ROUTE_TIMEOUT = "haproxy.router.openshift.io/timeout"
ROUTE_DEFAULT_SECONDS = OPENSHIFT_DEFAULT_TIMEOUT_SECONDS
NGINX_DEFAULT_SECONDS = 60.0
ALB_DEFAULT_SECONDS = 60.0


def controller(f: Frontend) -> str:
    """ "ingress-nginx", "nginx-inc", "alb", "route", "httproute" or "" (unknown)."""
    if f.kind in ("Route", "HTTPRoute"):
        return f.kind.lower()
    keys = " ".join(f.annotations)
    if "nginx.ingress.kubernetes.io/" in keys:
        return "ingress-nginx"
    if "nginx.org/" in keys:
        return "nginx-inc"
    if "alb.ingress.kubernetes.io/" in keys or f.ingress_class == "alb":
        return "alb"
    if "nginx" in f.ingress_class:
        return "ingress-nginx"  # the community controller's class; its defaults are the common ones
    return ""


def route_timeout_seconds(annotations: dict[str, str]) -> float | None:
    """HAProxy's timeout annotation: a number with a unit (`5m`, `300s`), bare numbers in milliseconds; the
    router's default when unset or malformed (it ignores a value it cannot read)."""
    text = annotations.get(ROUTE_TIMEOUT)
    if text is None:
        return ROUTE_DEFAULT_SECONDS
    try:
        return haproxy_timeout(text)
    except ValueError:
        return ROUTE_DEFAULT_SECONDS


def read_timeout(f: Frontend) -> tuple[float | None, bool]:
    """(the read timeout in seconds, whether it is the controller's default); None: cannot tell."""
    kind = controller(f)
    a = f.annotations
    if kind == "route":
        return route_timeout_seconds(a), ROUTE_TIMEOUT not in a
    if kind == "httproute":
        set_ = [t for t in f.timeouts if t is not None]
        if not set_ or len(set_) < len(f.timeouts):
            return None, True
        return min(set_), False
    if kind in ("ingress-nginx", "nginx-inc"):
        key = (
            "nginx.ingress.kubernetes.io/proxy-read-timeout"
            if kind == "ingress-nginx"
            else "nginx.org/proxy-read-timeout"
        )
        if key not in a:
            return NGINX_DEFAULT_SECONDS, True
        return duration_seconds(a[key]), False
    if kind == "alb":
        found = re.search(
            r"idle_timeout\.timeout_seconds=(\d+)", a.get("alb.ingress.kubernetes.io/load-balancer-attributes", "")
        )
        return (float(found.group(1)), False) if found else (ALB_DEFAULT_SECONDS, True)
    return None, True


def buffering(f: Frontend) -> bool | None:
    """Whether responses are buffered: True, False, or None when the controller cannot be told."""
    kind = controller(f)
    if kind == "ingress-nginx":
        return f.annotations.get("nginx.ingress.kubernetes.io/proxy-buffering", "off").strip().lower() == "on"
    if kind == "nginx-inc":
        return f.annotations.get("nginx.org/proxy-buffering", "true").strip().lower() in ("true", "on")
    if kind == "alb":
        return False  # an ALB streams responses
    return None
