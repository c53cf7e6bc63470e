"""The request timeout and buffering of each frontend, per controller, as the controllers read their objects."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.k8s import durations, frontends
from exporter.k8s.frontends import NO_TIMEOUT, Backend, Timeout

NS = "llm"
READ = "nginx.ingress.kubernetes.io/proxy-read-timeout"
BUFFERING = "nginx.ingress.kubernetes.io/proxy-buffering"
ALB_ATTRIBUTES = "alb.ingress.kubernetes.io/load-balancer-attributes"


def ingress(annotations: dict[str, str], ingress_class: str | None = "nginx") -> dict[str, Any]:
    backend = {"service": {"name": "vllm", "port": {"number": 8000}}}
    spec: dict[str, Any] = {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}]}
    if ingress_class is not None:
        spec["ingressClassName"] = ingress_class
    meta = {"name": "chat", "namespace": NS, "annotations": annotations}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def read(obj: dict[str, Any]) -> tuple[str, Timeout | None, bool | None]:
    f = frontends.ingress(obj)
    (rule,) = f.rules
    return f.controller, rule.timeout, f.buffering


@pytest.mark.parametrize(
    ("annotations", "ingress_class", "expected"),
    [
        # ingress-nginx: whole seconds (strconv.Atoi); anything else leaves its default; buffering off
        ({}, "nginx", ("ingress-nginx", Timeout(60, "default"), False)),
        ({READ: "3600"}, "nginx", ("ingress-nginx", Timeout(3600, "annotation"), False)),
        ({READ: "1h"}, "nginx", ("ingress-nginx", Timeout(60, "default"), False)),
        ({BUFFERING: "on"}, "internal", ("ingress-nginx", Timeout(60, "default"), True)),
        # F5 NGINX: the same class name, its own annotations; nginx times; buffering on by default
        ({"nginx.org/proxy-read-timeout": "600s"}, "nginx", ("nginx-inc", Timeout(600, "annotation"), True)),
        ({"nginx.org/proxy-read-timeout": "10m", "nginx.org/proxy-buffering": "False"}, "nginx",
         ("nginx-inc", Timeout(600, "annotation"), False)),
        ({"nginx.org/proxy-read-timeout": "600"}, "nginx", ("nginx-inc", Timeout(600, "annotation"), True)),
        ({"nginx.org/proxy-read-timeout": "ten minutes"}, "nginx", ("nginx-inc", None, True)),  # Ingress rejected
        ({"nginx.org/proxy-buffering": "on"}, "nginx", ("nginx-inc", Timeout(60, "default"), None)),  # rejected too
        # AWS ALB: the load balancer's idle timeout; it streams
        ({}, "alb", ("alb", Timeout(60, "default"), False)),
        ({ALB_ATTRIBUTES: "deletion_protection.enabled=true,idle_timeout.timeout_seconds=900"}, None,
         ("alb", Timeout(900, "annotation"), False)),
        # GKE: the backend service timeout (a BackendConfig's: see below)
        ({"kubernetes.io/ingress.class": "gce"}, None, ("gce", Timeout(30, "default"), None)),
        ({}, "gce-internal", ("gce", Timeout(30, "default"), None)),
        # a class is more telling than stray annotations; an unknown controller has no documented default
        ({READ: "3600"}, "gce", ("gce", Timeout(30, "default"), None)),
        ({}, "traefik", ("", None, None)),
        ({}, None, ("", None, None)),
    ],
)  # fmt: skip
def test_ingress_per_controller(annotations: dict[str, str], ingress_class: str | None, expected: Any) -> None:
    assert read(ingress(annotations, ingress_class)) == expected


@pytest.mark.parametrize(
    ("timeouts", "expected"),
    [
        ({"request": "300s", "backendRequest": "2m"}, Timeout(120, "spec")),
        ({"request": "0s"}, Timeout(NO_TIMEOUT, "spec")),  # "0s" disables it
        ({"request": "0s", "backendRequest": "0s"}, Timeout(NO_TIMEOUT, "spec")),
        ({"request": "0s", "backendRequest": "45s"}, Timeout(45, "spec")),
        ({"backendRequest": "1h"}, Timeout(3600, "spec")),
        ({"request": "ten"}, None),  # refused by the CRD; read as unset
        ({}, None),  # implementation-specific
    ],
)
def test_httproute_rule_timeouts(timeouts: dict[str, str], expected: Timeout | None) -> None:
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "api", "namespace": NS},
        "spec": {"rules": [{"backendRefs": [{"name": "vllm", "port": 8000}], "timeouts": timeouts}]},
    }
    f = frontends.frontend(route)
    assert f is not None and f.controller == "gateway-api" and f.buffering is None
    assert f.rules == (frontends.Rule((Backend("Service", "vllm", "8000"),), expected),)


def test_httproute_backends() -> None:
    refs = [
        {"name": "vllm"},
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool"},
        {"group": "inference.networking.x-k8s.io", "kind": "InferencePool", "name": "old-pool"},
        {"name": "elsewhere", "namespace": "other"},  # needs a ReferenceGrant; not a Service of this namespace
        {"group": "s3", "kind": "Bucket", "name": "b"},
    ]
    route = {"metadata": {"name": "api", "namespace": NS}, "spec": {"rules": [{"backendRefs": refs}]}}
    (rule,) = frontends.httproute(route).rules
    assert rule.backends == (
        Backend("Service", "vllm"),
        Backend("InferencePool", "pool"),
        Backend("InferencePool", "old-pool"),
    )


@pytest.mark.parametrize(("text", "seconds"), [("60s", 60), ("1m", 60), ("1h 30m", 5400), ("600", 600), ("1d", 86400)])
def test_nginx_times(text: str, seconds: float) -> None:
    assert durations.nginx_time(text) == seconds


@pytest.mark.parametrize("text", ["", "1.5s", "10 seconds", "-1s", "s"])
def test_malformed_nginx_times(text: str) -> None:
    with pytest.raises(ValueError, match="not an nginx time"):
        durations.nginx_time(text)


GCE = frontends.ingress(ingress({}, "gce"))


@pytest.mark.parametrize(
    ("annotation", "port", "configs", "expected"),
    [
        (None, "8000", {}, Timeout(30, "default")),  # no BackendConfig: the load balancer's default
        ('{"default": "long"}', "8000", {"long": 3600.0}, Timeout(3600, "spec")),
        ('{"ports": {"8000": "long"}}', "8000", {"long": 3600.0}, Timeout(3600, "spec")),
        ('{"ports": {"http": "long"}, "default": "short"}', "http", {"long": 3600.0, "short": 10.0},
         Timeout(3600, "spec")),
        # the Ingress names the port by number, the annotation by name: either BackendConfig may apply
        ('{"ports": {"http": "long"}, "default": "short"}', "8000", {"long": 3600.0, "short": 10.0}, None),
        ('{"ports": {"http": "long"}, "default": "same"}', "8000", {"long": 600.0, "same": 600.0},
         Timeout(600, "spec")),
        ('{"default": "plain"}', "8000", {"plain": None}, Timeout(30, "default")),  # it sets no timeoutSec
        ('{"default": "unseen"}', "8000", {}, None),
        ('{"default": "unseen"}', "8000", None, None),  # BackendConfigs not served or not granted
        ("not json", "8000", {}, None),
    ],
)  # fmt: skip
def test_gke_backend_config(annotation: str | None, port: str, configs: Any, expected: Timeout | None) -> None:
    backend = Backend("Service", "vllm", port)
    assert frontends.backend_timeout(GCE, GCE.rules[0], backend, annotation, configs) == expected


def test_backend_config_objects() -> None:
    obj = {"apiVersion": "cloud.google.com/v1", "kind": "BackendConfig", "metadata": {"name": "long"},
           "spec": {"timeoutSec": 3600}}  # fmt: skip
    assert frontends.backend_config(obj, NS) == (NS, "long", 3600.0)
    assert frontends.backend_config({**obj, "spec": {}}, NS) == (NS, "long", None)
    assert frontends.backend_config({**obj, "apiVersion": "example.com/v1"}, NS) is None
    # as the API server lists it (no kind or apiVersion on the items): what is read, and nothing else
    listed = {"metadata": {"name": "long", "namespace": NS, "uid": "u", "annotations": {"a": "b"}},
              "spec": {"timeoutSec": 3600, "iap": {"enabled": True, "oauthclientCredentials": {"secretName": "s"}}},
              }  # fmt: skip
    kept = frontends.backend_config_kept(listed)
    assert kept == {"apiVersion": "cloud.google.com/v1", "kind": "BackendConfig",
                    "metadata": {"name": "long", "namespace": NS}, "spec": {"timeoutSec": 3600}}  # fmt: skip
    assert frontends.backend_config(kept) == (NS, "long", 3600.0)
    assert frontends.backend_config_kept({"metadata": {"name": "x", "namespace": NS}})["spec"] == {}
    assert frontends.backend_config_ref({"beta.cloud.google.com/backend-config": '{"default": "x"}'}) == (
        '{"default": "x"}'
    )


def test_openshift_route() -> None:
    route = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "chat", "namespace": NS, "annotations": {frontends.HAPROXY_TIMEOUT: "90000"}},
        "spec": {"to": {"kind": "Service", "name": "vllm"}, "alternateBackends": [{"kind": "Service", "name": "v2"}]},
    }
    f = frontends.frontend(route)
    assert f is not None and (f.controller, f.buffering) == ("openshift-router", None)
    assert f.rules == (
        frontends.Rule((Backend("Service", "vllm"), Backend("Service", "v2")), Timeout(90, "annotation")),
    )
    assert frontends.frontend({**route, "apiVersion": "example.com/v1"}) is None
