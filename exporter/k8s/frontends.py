"""The frontends that carry requests to the engines and the timeout and response buffering each applies (pure).

One reading for the cluster role's routes (`llm_route_timeout_seconds`, `llm_route_buffering`) and the audit
(`ingress-timeout-short`, `ingress-buffering`):

- Ingress, per controller (`CONTROLLERS`): ingress-nginx `nginx.ingress.kubernetes.io/proxy-read-timeout`
  (whole seconds; a value it cannot read leaves its default) and `.../proxy-buffering`; F5 NGINX
  `nginx.org/proxy-read-timeout` (an nginx time) and `nginx.org/proxy-buffering`; AWS ALB
  `idle_timeout.timeout_seconds` in `alb.ingress.kubernetes.io/load-balancer-attributes`; GKE (`gce`,
  `gce-internal`): the backend service timeout, set by the BackendConfig a Service names, 30 s without one.
- HTTPRoute (Gateway API): each rule's `timeouts.request` and `.backendRequest`, the shorter cutting first;
  "0s" disables a timeout ("Setting a timeout to the zero duration (e.g. "0s") SHOULD disable the timeout
  completely": https://gateway-api.sigs.k8s.io/reference/spec/#httproutetimeouts); unset is
  implementation-specific.
- Route (OpenShift): `haproxy.router.openshift.io/timeout` (HAProxy's time format).

A timeout the object does not set is the controller's default from `defaults` (`DOCUMENTED` unless a caller
knows the cluster's own setting); None where neither says.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from exporter.k8s.durations import gateway_duration, haproxy_time, nginx_time
from exporter.k8s.fields import as_dict, as_list, meta, strs

INGRESS_NGINX = "ingress-nginx"
NGINX_INC = "nginx-inc"  # F5 NGINX Ingress Controller (nginxinc/kubernetes-ingress)
ALB = "alb"
GCE = "gce"
OPENSHIFT = "openshift-router"
GATEWAY = "gateway-api"  # an HTTPRoute: whichever implementation serves its Gateway
UNKNOWN = ""

NO_TIMEOUT = math.inf  # what "0s" sets: no timeout at all


@dataclass(frozen=True)
class Controller:
    default_timeout: float | None  # seconds, when the object sets none; None: not documented
    default_buffering: bool | None  # whether it buffers responses when the object says nothing; None: unknown
    cluster_setting: bool  # the default is the controller's own configuration, which a cluster may have changed


CONTROLLERS: dict[str, Controller] = {
    # proxy-read-timeout 60, proxy-buffering "off":
    # https://kubernetes.github.io/ingress-nginx/user-guide/nginx-configuration/configmap/#proxy-read-timeout
    INGRESS_NGINX: Controller(60.0, False, True),
    # proxy-read-timeout 60s, proxy-buffering True:
    # https://docs.nginx.com/nginx-ingress-controller/configuration/global-configuration/configmap-resource/
    NGINX_INC: Controller(60.0, True, True),
    # the load balancer's idle timeout, 60 s; an ALB streams responses:
    # https://docs.aws.amazon.com/elasticloadbalancing/latest/application/application-load-balancers.html#connection-idle-timeout
    ALB: Controller(60.0, False, False),
    # the backend service timeout, 30 s unless a BackendConfig sets timeoutSec:
    # https://cloud.google.com/kubernetes-engine/docs/how-to/ingress-configuration#timeout
    GCE: Controller(30.0, None, False),
    # ROUTER_DEFAULT_SERVER_TIMEOUT 30s:
    # https://docs.openshift.com/container-platform/4.16/networking/routes/route-configuration.html#nw-configuring-route-timeouts_route-configuration
    OPENSHIFT: Controller(30.0, None, True),
    # "When this field is unspecified, request timeout behavior is implementation-specific."
    GATEWAY: Controller(None, None, True),
    UNKNOWN: Controller(None, None, True),
}
DOCUMENTED: dict[str, float | None] = {name: c.default_timeout for name, c in CONTROLLERS.items()}

_GCE_CLASSES = ("gce", "gce-internal")  # https://cloud.google.com/kubernetes-engine/docs/concepts/ingress
_ANNOTATION_PREFIXES = (
    ("nginx.ingress.kubernetes.io/", INGRESS_NGINX),
    ("nginx.org/", NGINX_INC),
    ("nginx.com/", NGINX_INC),  # NGINX Plus annotations of the same controller
    ("alb.ingress.kubernetes.io/", ALB),
)
NGINX_READ_TIMEOUT = "nginx.ingress.kubernetes.io/proxy-read-timeout"
NGINX_BUFFERING = "nginx.ingress.kubernetes.io/proxy-buffering"
NGINX_INC_READ_TIMEOUT = "nginx.org/proxy-read-timeout"
NGINX_INC_BUFFERING = "nginx.org/proxy-buffering"
ALB_ATTRIBUTES = "alb.ingress.kubernetes.io/load-balancer-attributes"
HAPROXY_TIMEOUT = "haproxy.router.openshift.io/timeout"
# the Service annotation that names the BackendConfig of each port (the beta one on older clusters)
BACKEND_CONFIG = ("cloud.google.com/backend-config", "beta.cloud.google.com/backend-config")
_ALB_IDLE = re.compile(r"(?:^|,)\s*idle_timeout\.timeout_seconds\s*=\s*(\d+)\s*(?:,|$)")
_GO_TRUE, _GO_FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")
_INFERENCE_GROUPS = ("inference.networking.k8s.io", "inference.networking.x-k8s.io")


@dataclass(frozen=True)
class Timeout:
    seconds: float  # NO_TIMEOUT where none applies
    source: str  # "annotation", "spec" or "default"


@dataclass(frozen=True)
class Backend:
    kind: str  # "Service" or "InferencePool"
    name: str
    port: str = ""  # as the frontend names it: a number or a port name ("" unset)


@dataclass(frozen=True)
class Rule:
    backends: tuple[Backend, ...]
    timeout: Timeout | None  # None: neither the object nor the controller's default says


@dataclass(frozen=True)
class Frontend:
    """An Ingress, HTTPRoute or Route: the controller that serves it, its rules, whether it buffers."""

    kind: str  # "Ingress", "HTTPRoute" or "Route"
    namespace: str
    name: str
    controller: str  # a key of CONTROLLERS
    rules: tuple[Rule, ...]
    buffering: bool | None  # None: the controller cannot be told, or says nothing per object


def _default(controller: str, defaults: Mapping[str, float | None]) -> Timeout | None:
    seconds = defaults.get(controller)
    return None if seconds is None else Timeout(seconds, "default")


def ingress_controller(annotations: Mapping[str, str], ingress_class: str) -> str:
    """Which controller serves an Ingress: its class where that names one controller, else the annotations it
    carries (F5 NGINX and ingress-nginx both default to the class `nginx`), else a class named after nginx."""
    if ingress_class in _GCE_CLASSES:
        return GCE
    if ingress_class == "alb":
        return ALB
    for prefix, controller in _ANNOTATION_PREFIXES:
        if any(key.startswith(prefix) for key in annotations):
            return controller
    return INGRESS_NGINX if "nginx" in ingress_class else UNKNOWN


def _ingress_timeout(controller: str, a: Mapping[str, str], defaults: Mapping[str, float | None]) -> Timeout | None:
    if controller == INGRESS_NGINX:
        raw = a.get(NGINX_READ_TIMEOUT, "")
        # strconv.Atoi; a value it cannot read is logged and its default kept
        return Timeout(float(raw), "annotation") if raw.isdigit() else _default(controller, defaults)
    if controller == NGINX_INC and NGINX_INC_READ_TIMEOUT in a:
        try:
            return Timeout(nginx_time(a[NGINX_INC_READ_TIMEOUT]), "annotation")
        except ValueError:
            return None  # the controller rejects the whole Ingress: it serves nothing
    if controller == ALB and (found := _ALB_IDLE.search(a.get(ALB_ATTRIBUTES, ""))):
        return Timeout(float(found.group(1)), "annotation")
    return _default(controller, defaults)


def _buffering(controller: str, a: Mapping[str, str]) -> bool | None:
    if controller == INGRESS_NGINX:
        value = a.get(NGINX_BUFFERING, "").strip().lower()
        return value == "on" if value in ("on", "off") else CONTROLLERS[controller].default_buffering
    if controller == NGINX_INC and NGINX_INC_BUFFERING in a:
        value = a[NGINX_INC_BUFFERING].strip()
        return True if value in _GO_TRUE else False if value in _GO_FALSE else None  # else: Ingress rejected
    return CONTROLLERS[controller].default_buffering


def _ingress_backend(raw: Any) -> Backend | None:
    backend = as_dict(raw)
    service = as_dict(backend.get("service"))
    name = service.get("name") or backend.get("serviceName")  # networking.k8s.io/v1, or v1beta1's fields
    if not name:
        return None
    port = as_dict(service.get("port"))
    number = port.get("number") or port.get("name") or backend.get("servicePort") or ""
    return Backend("Service", str(name), str(number))


def ingress(
    obj: Mapping[str, Any], default_namespace: str = "", defaults: Mapping[str, float | None] = DOCUMENTED
) -> Frontend:
    namespace, name, _, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    ingress_class = str(spec.get("ingressClassName") or annotations.get("kubernetes.io/ingress.class") or "")
    controller = ingress_controller(annotations, ingress_class)
    found = [_ingress_backend(spec.get("defaultBackend") or spec.get("backend"))]
    for rule in (as_dict(r) for r in as_list(spec.get("rules"))):
        found += [_ingress_backend(as_dict(p).get("backend")) for p in as_list(as_dict(rule.get("http")).get("paths"))]
    backends = tuple(dict.fromkeys(b for b in found if b is not None))
    rule_ = Rule(backends, _ingress_timeout(controller, annotations, defaults))
    return Frontend("Ingress", namespace, name, controller, (rule_,), _buffering(controller, annotations))


def _rule_timeout(timeouts: Mapping[str, Any], defaults: Mapping[str, float | None]) -> Timeout | None:
    given = []
    for key in ("request", "backendRequest"):
        if key in timeouts:
            try:
                seconds = gateway_duration(str(timeouts[key]))
            except ValueError:
                continue  # the CRD's validation refuses these; an old object may still hold one
            given.append(seconds or NO_TIMEOUT)
    return Timeout(min(given), "spec") if given else _default(GATEWAY, defaults)


def _route_backend(ref: Mapping[str, Any], namespace: str) -> Backend | None:
    if not ref.get("name") or str(ref.get("namespace") or namespace) != namespace:
        return None  # a cross-namespace reference (with its ReferenceGrant) reaches no Service of this namespace
    group, kind = str(ref.get("group") or ""), str(ref.get("kind") or "Service")
    port = str(ref.get("port") or "")
    if group in ("", "core") and kind == "Service":
        return Backend("Service", str(ref["name"]), port)
    if group in _INFERENCE_GROUPS and kind == "InferencePool":
        return Backend("InferencePool", str(ref["name"]), port)
    return None


def httproute(
    obj: Mapping[str, Any], default_namespace: str = "", defaults: Mapping[str, float | None] = DOCUMENTED
) -> Frontend:
    namespace, name, _, _ = meta(obj, default_namespace)
    rules = []
    for rule in (as_dict(r) for r in as_list(as_dict(obj.get("spec")).get("rules"))):
        found = (_route_backend(as_dict(ref), namespace) for ref in as_list(rule.get("backendRefs")))
        backends = tuple(dict.fromkeys(b for b in found if b is not None))
        rules.append(Rule(backends, _rule_timeout(as_dict(rule.get("timeouts")), defaults)))
    return Frontend("HTTPRoute", namespace, name, GATEWAY, tuple(rules), None)


def openshift_route(
    obj: Mapping[str, Any], default_namespace: str = "", defaults: Mapping[str, float | None] = DOCUMENTED
) -> Frontend:
    namespace, name, _, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    timeout = _default(OPENSHIFT, defaults)
    # the router ignores a malformed value and keeps its default
    with contextlib.suppress(ValueError):
        if HAPROXY_TIMEOUT in annotations:
            timeout = Timeout(haproxy_time(annotations[HAPROXY_TIMEOUT]), "annotation")
    refs = [as_dict(spec.get("to")), *(as_dict(b) for b in as_list(spec.get("alternateBackends")))]
    named = (r for r in refs if r.get("name") and r.get("kind", "Service") == "Service")
    backends = tuple(dict.fromkeys(Backend("Service", str(r["name"])) for r in named))
    return Frontend("Route", namespace, name, OPENSHIFT, (Rule(backends, timeout),), None)


def frontend(
    obj: Mapping[str, Any], default_namespace: str = "default", defaults: Mapping[str, float | None] = DOCUMENTED
) -> Frontend | None:
    """An Ingress, HTTPRoute or OpenShift Route as a manifest writes it (kind and apiVersion); None otherwise."""
    kind, api = str(obj.get("kind") or ""), str(obj.get("apiVersion") or "")
    if kind == "Ingress":
        return ingress(obj, default_namespace, defaults)
    if kind == "HTTPRoute" and api.startswith("gateway.networking.k8s.io/"):
        return httproute(obj, default_namespace, defaults)
    if kind == "Route" and api.startswith("route.openshift.io/"):
        return openshift_route(obj, default_namespace, defaults)
    return None


def backend_config_ref(annotations: Mapping[str, str]) -> str | None:
    """The Service's BackendConfig annotation (GKE), as written; None without one."""
    return next((annotations[k] for k in BACKEND_CONFIG if k in annotations), None)


BACKEND_CONFIG_API = "cloud.google.com/v1"


def backend_config_kept(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A BackendConfig as the API server lists it (its items carry no kind or apiVersion) reduced to what
    `backend_config` reads: its name, namespace and `spec.timeoutSec`, with its kind and apiVersion."""
    metadata, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    return {
        "apiVersion": BACKEND_CONFIG_API,
        "kind": "BackendConfig",
        "metadata": {k: metadata[k] for k in ("name", "namespace") if k in metadata},
        "spec": {k: spec[k] for k in ("timeoutSec",) if k in spec},
    }


def backend_config(obj: Mapping[str, Any], default_namespace: str = "default") -> tuple[str, str, float | None] | None:
    """(namespace, name, spec.timeoutSec or None) of a GKE BackendConfig; None for any other object."""
    if obj.get("kind") != "BackendConfig" or not str(obj.get("apiVersion") or "").startswith("cloud.google.com/"):
        return None
    namespace, name, _, _ = meta(obj, default_namespace)
    seconds = as_dict(obj.get("spec")).get("timeoutSec")
    return namespace, name, float(seconds) if isinstance(seconds, int) and not isinstance(seconds, bool) else None


def _config_names(annotation: str, port: str) -> set[str | None] | None:
    """The BackendConfigs that may apply to `port` (None: the port has none); None when unreadable."""
    try:
        ref = json.loads(annotation)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return None
    if not isinstance(ref, dict):
        return None
    ports, default = strs(ref.get("ports")), ref.get("default")
    if port in ports:
        return {ports[port]}
    # the annotation may name the port the other way (number or name): any of them, or the default
    return {*ports.values(), str(default) if default else None}


def backend_timeout(
    front: Frontend,
    rule: Rule,
    backend: Backend,
    config_ref: str | None = None,
    configs: Mapping[str, float | None] | None = None,
) -> Timeout | None:
    """The timeout `rule` applies to requests for `backend`: the rule's own, except behind GKE's load balancer,
    where the BackendConfig the Service names (`config_ref`, its annotation) sets it: `configs` maps the
    BackendConfigs of the namespace that can be seen to their timeoutSec. None: cannot be told."""
    if front.controller != GCE or backend.kind != "Service" or config_ref is None:
        return rule.timeout
    names = _config_names(config_ref, backend.port)
    if names is None:
        return None
    found: set[Timeout | None] = set()
    for name in names:
        if name is None:
            found.add(rule.timeout)
        elif configs is None or name not in configs:
            return None  # a BackendConfig not seen (not among the manifests, not served or not granted)
        else:
            seconds = configs[name]
            found.add(rule.timeout if seconds is None else Timeout(seconds, "spec"))
    return found.pop() if len(found) == 1 else None


def reaching_timeouts(
    front: Frontend,
    targets: Collection[tuple[str, str]],
    config_refs: Mapping[str, str | None] | None = None,
    configs: Mapping[str, float | None] | None = None,
) -> list[Timeout | None]:
    """The timeout applied to each backend of `front` among `targets` ((kind, name) in its namespace);
    `config_refs`: each Service's BackendConfig annotation (GKE), by name."""
    refs = config_refs or {}
    return [
        backend_timeout(front, rule, b, refs.get(b.name), configs)
        for rule in front.rules
        for b in rule.backends
        if (b.kind, b.name) in targets
    ]
