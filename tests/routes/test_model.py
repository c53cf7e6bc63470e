"""Route timeouts from Ingress (per controller), HTTPRoute and Route objects, joined to the engine Services."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.exposition import render
from exporter.k8s import durations, frontends
from exporter.replicas.startup import PodStart, pod_start
from exporter.routes import model
from exporter.routes.collector import families

NS = "llm"
NGINX = "nginx.ingress.kubernetes.io/"


def ingress(name: str, service: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"namespace": NS, "name": name, "annotations": annotations or {}},
        "spec": {
            "ingressClassName": "nginx",
            "rules": [{"http": {"paths": [{"path": "/", "backend": {"service": {"name": service}}}]}}],
        },
    }


def httproute(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"namespace": NS, "name": name}, "spec": {"rules": rules}}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10), ("500ms", 0.5), ("1h30m", 5400), ("2m", 120), ("0s", 0), ("1h1m1s1ms", 3661.001)],
)
def test_gateway_api_durations(text: str, seconds: float) -> None:
    assert durations.gateway_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "1d", "s", "10 s", "-1s", "1.5.2s"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        durations.gateway_duration(text)


DEFAULTS = model.defaults(60.0, 0.0, 30.0)  # the configuration's defaults


def only_rule(route: frontends.Frontend) -> tuple[tuple[str, ...], frontends.Timeout | None]:
    (rule,) = route.rules
    return tuple(b.name for b in rule.backends), rule.timeout


def test_ingress_nginx_read_timeout_annotation_default_and_buffering() -> None:
    given = frontends.ingress(
        ingress("chat", "vllm", {NGINX + "proxy-read-timeout": "600", NGINX + "proxy-buffering": "on"}),
        defaults=DEFAULTS,
    )
    assert (given.kind, given.namespace, given.name, given.controller, given.buffering) == (
        "Ingress", NS, "chat", "ingress-nginx", True
    )  # fmt: skip
    assert only_rule(given) == (("vllm",), frontends.Timeout(600.0, "annotation"))
    unset = frontends.ingress(ingress("chat", "vllm"), defaults=DEFAULTS)
    assert only_rule(unset) == (("vllm",), frontends.Timeout(60.0, "default")) and unset.buffering is False
    # ingress-nginx reads whole seconds (strconv.Atoi): anything else is ignored and its default kept
    for bad in ("ten", "600s"):
        read = frontends.ingress(ingress("chat", "vllm", {NGINX + "proxy-read-timeout": bad}), defaults=DEFAULTS)
        assert only_rule(read)[1] == frontends.Timeout(60.0, "default")


def test_httproute_the_shorter_of_request_and_backend_request_cuts_first() -> None:
    route = frontends.httproute(
        httproute(
            "chat",
            [
                {
                    "backendRefs": [{"name": "vllm", "port": 8000}],
                    "timeouts": {"request": "300s", "backendRequest": "2m"},
                },
                {"backendRefs": [{"name": "web"}], "timeouts": {"request": "0s"}},  # 0s: disabled
                {"backendRefs": [{"name": "other"}]},  # unset: the configured default
                {
                    "backendRefs": [
                        {"name": "x", "namespace": "elsewhere"},
                        {"name": "b", "kind": "Bucket", "group": "s3"},
                    ]
                },
            ],
        ),
        defaults=DEFAULTS,
    )
    assert [(tuple(b.name for b in r.backends), r.timeout) for r in route.rules] == [
        (("vllm",), frontends.Timeout(120.0, "spec")),
        (("web",), frontends.Timeout(frontends.NO_TIMEOUT, "spec")),
        (("other",), None),
        ((), None),
    ]


def test_only_routes_reaching_an_engine_service_count_with_their_shortest_timeout() -> None:
    services = [
        model.Service(NS, "vllm", (("app", "vllm"),)),
        model.Service(NS, "web", (("app", "web"),)),
        model.Service(NS, "headless", ()),  # selects nothing
        model.Service("other", "vllm", (("app", "vllm"),)),  # no engine pod in its namespace
    ]
    pods = [PodStart("u1", NS, "vllm", 0.0, None, None, (("app", "vllm"), ("pod-template-hash", "abc")))]
    engines = model.engine_services(services, pods)
    assert set(engines) == {(NS, "vllm")}

    def route(kind: str, name: str, *rules: tuple[tuple[str, ...], float]) -> frontends.Frontend:
        source = "spec" if kind == "HTTPRoute" else "default"
        return frontends.Frontend(
            kind, NS, name, "gateway-api" if kind == "HTTPRoute" else "ingress-nginx",
            tuple(frontends.Rule(tuple(frontends.Backend("Service", n) for n in names), frontends.Timeout(t, source))
                  for names, t in rules),
            None if kind == "HTTPRoute" else False,
        )  # fmt: skip

    routes = [
        route("HTTPRoute", "chat", (("vllm",), 300.0), (("vllm", "web"), 120.0)),
        route("Ingress", "site", (("web",), 60.0)),
        route("HTTPRoute", "unlimited", (("vllm",), frontends.NO_TIMEOUT)),
    ]
    timeouts = model.engine_route_timeouts(routes, engines)
    assert timeouts == [model.RouteTimeout("HTTPRoute", NS, "chat", 120.0, "spec")]
    assert [r.name for r in model.engine_routes(routes, engines)] == ["chat", "unlimited"]


def test_engine_pods_opt_in_with_the_scrape_annotation_and_keep_their_labels() -> None:
    meta = {"namespace": NS, "labels": {"app": "vllm"}, "annotations": {"llm-exporter.io/scrape": "true"}}
    pod = {"metadata": {**meta, "uid": "u1", "creationTimestamp": "2026-12-03T10:00:00Z"}}
    record = pod_start(pod, "llm-exporter.io/scrape")
    assert record is not None and (record.namespace, record.labels) == (NS, (("app", "vllm"),))
    pod["metadata"]["annotations"] = {}
    assert pod_start(pod, "llm-exporter.io/scrape") is None


def test_exposition() -> None:
    timeouts = [frontends.Timeout(60.0, "default")]
    vllm = (frontends.Backend("Service", "vllm"),)
    routes = [
        frontends.Frontend("Ingress", NS, "chat", "ingress-nginx", (frontends.Rule(vllm, timeouts[0]),), True),
        frontends.Frontend("HTTPRoute", NS, "api", "gateway-api", (frontends.Rule(vllm, None),), None),
    ]
    assert render(families([model.RouteTimeout("Ingress", NS, "chat", 60.0, "default")], routes)) == (
        "# HELP llm_route_timeout_seconds The shortest timeout an Ingress, HTTPRoute or OpenShift Route applies to "
        "requests it sends to an engine Service (source: annotation, spec, or the configured default when unset). "
        "Longer generations are cut.\n"
        "# TYPE llm_route_timeout_seconds gauge\n"
        'llm_route_timeout_seconds{namespace="llm",route="chat",kind="Ingress",source="default"} 60\n'
        "# HELP llm_route_buffering 1 when the route's proxy buffers engine responses (ingress-nginx proxy-buffering "
        "on): a token stream reaches the user in bursts.\n"
        "# TYPE llm_route_buffering gauge\n"
        'llm_route_buffering{namespace="llm",route="chat",kind="Ingress"} 1\n'
    )


def openshift_route(name: str, service: str, timeout: str | None = None) -> dict[str, Any]:
    annotations = {frontends.HAPROXY_TIMEOUT: timeout} if timeout is not None else {}
    return {
        "metadata": {"namespace": NS, "name": name, "annotations": annotations},
        "spec": {"host": "chat.apps.example.com", "to": {"kind": "Service", "name": service, "weight": 100},
                 "alternateBackends": [{"kind": "Service", "name": f"{service}-canary", "weight": 10}]},
    }  # fmt: skip


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("5m", 300), ("2h", 7200), ("500ms", 0.5), ("90000", 90)])
def test_haproxy_times(text: str, seconds: float) -> None:
    assert durations.haproxy_time(text) == seconds


VLLM = {(NS, "vllm"): model.Service(NS, "vllm", (("app", "vllm"),))}


def test_openshift_route_timeout_annotation_and_the_routers_default() -> None:
    plain = frontends.openshift_route(openshift_route("plain", "vllm"), defaults=DEFAULTS)
    assert only_rule(plain) == (("vllm", "vllm-canary"), frontends.Timeout(30.0, "default"))
    assert plain.buffering is None  # HAProxy streams; nothing to say per route
    long = frontends.openshift_route(openshift_route("long", "vllm", "10m"), defaults=DEFAULTS)
    assert only_rule(long)[1] == frontends.Timeout(600.0, "annotation")
    broken = frontends.openshift_route(openshift_route("broken", "vllm", "ten minutes"), defaults=DEFAULTS)
    assert only_rule(broken)[1] == frontends.Timeout(30.0, "default")  # the router ignores it too
    timeouts = model.engine_route_timeouts([plain, long], VLLM)
    assert [(t.kind, t.name, t.timeout_seconds) for t in timeouts] == [
        ("Route", "long", 600.0),
        ("Route", "plain", 30.0),
    ]


def exposition(
    objs: list[dict[str, Any]], services: list[dict[str, Any]], configs: list[model.BackendConfig] | None = None
) -> str:
    """The routes' families for these Ingresses and Services, with one engine pod behind Service `vllm`;
    `configs`: the BackendConfigs seen (None: not served or not granted)."""
    routes = [frontends.ingress(o, defaults=DEFAULTS) for o in objs]
    pods = [PodStart("u1", NS, "vllm-0", 0.0, None, None, (("app", "vllm"),))]
    engines = model.engine_services([model.service_record(s) for s in services], pods)
    timeouts = model.engine_route_timeouts(routes, engines, configs)
    text = render(families(timeouts, model.engine_routes(routes, engines)))
    return "".join(line + "\n" for line in text.splitlines() if not line.startswith("#"))


def service(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"namespace": NS, "name": name, "annotations": annotations or {}},
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 8000}]},
    }


def test_f5_nginx_reads_its_own_annotations() -> None:
    """F5 NGINX (`nginx.org/*`, class `nginx` like ingress-nginx's): an nginx time, buffering on by default."""
    long = ingress("long", "vllm", {"nginx.org/proxy-read-timeout": "600s", "nginx.org/proxy-buffering": "False"})
    hours = ingress("hours", "vllm", {"nginx.org/proxy-read-timeout": "1h 30m"})
    plain = ingress("plain", "vllm", {"nginx.org/client-max-body-size": "4m"})  # F5's default: 60s, buffering on
    assert exposition([long, hours, plain], [service("vllm")]) == (
        'llm_route_timeout_seconds{namespace="llm",route="hours",kind="Ingress",source="annotation"} 5400\n'
        'llm_route_timeout_seconds{namespace="llm",route="long",kind="Ingress",source="annotation"} 600\n'
        'llm_route_timeout_seconds{namespace="llm",route="plain",kind="Ingress",source="default"} 60\n'
        'llm_route_buffering{namespace="llm",route="long",kind="Ingress"} 0\n'
        'llm_route_buffering{namespace="llm",route="hours",kind="Ingress"} 1\n'
        'llm_route_buffering{namespace="llm",route="plain",kind="Ingress"} 1\n'
    )


def gce_ingress(name: str, backend: str, port: dict[str, Any]) -> dict[str, Any]:
    obj = ingress(name, backend, {"kubernetes.io/ingress.class": "gce"})
    del obj["spec"]["ingressClassName"]
    obj["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"] = port
    return obj


def test_gke_ingress_has_the_backend_service_timeout() -> None:
    """GKE's load balancer cuts at its backend service timeout: 30 s unless the BackendConfig the Service names
    sets timeoutSec; where BackendConfigs are not seen (not served, not granted) or the one named is not found,
    the timeout cannot be told: no series."""
    plain = gce_ingress("plain", "vllm", {"number": 8000})
    assert exposition([plain], [service("vllm")]) == (
        'llm_route_timeout_seconds{namespace="llm",route="plain",kind="Ingress",source="default"} 30\n'
    )
    configured = service("vllm", {"cloud.google.com/backend-config": '{"default": "long"}'})
    assert exposition([plain], [configured]) == ""
    assert exposition([plain], [configured], []) == ""
    assert exposition([plain], [configured], [("other", "long", 600.0), (NS, "short", 10.0)]) == ""
    assert exposition([plain], [configured], [(NS, "long", 600.0)]) == (
        'llm_route_timeout_seconds{namespace="llm",route="plain",kind="Ingress",source="spec"} 600\n'
    )
    assert exposition([plain], [configured], [(NS, "long", None)]) == (  # it sets no timeoutSec
        'llm_route_timeout_seconds{namespace="llm",route="plain",kind="Ingress",source="default"} 30\n'
    )
    # the ALB's idle timeout is the load balancer's too: not the configured ingress default
    alb = ingress(
        "alb", "vllm", {"alb.ingress.kubernetes.io/load-balancer-attributes": "idle_timeout.timeout_seconds=900"}
    )
    alb["spec"]["ingressClassName"] = "alb"
    assert exposition([alb], [service("vllm")]) == (
        'llm_route_timeout_seconds{namespace="llm",route="alb",kind="Ingress",source="annotation"} 900\n'
        'llm_route_buffering{namespace="llm",route="alb",kind="Ingress"} 0\n'
    )
    other = model.defaults(300.0, 0.0, 30.0)  # a cluster whose ingress-nginx ConfigMap says 300
    assert only_rule(frontends.ingress(plain, defaults=other))[1] == frontends.Timeout(30.0, "default")
    assert only_rule(frontends.ingress(ingress("n", "vllm"), defaults=other))[1] == frontends.Timeout(300.0, "default")


def test_httproute_0s_means_no_timeout() -> None:
    """Gateway API: "0s" disables the timeout; the route has no series rather than a 0 s one."""
    route = frontends.httproute(
        httproute("api", [{"backendRefs": [{"name": "vllm", "port": 8000}], "timeouts": {"request": "0s"}}]),
        defaults=model.defaults(60.0, 15.0, 30.0),
    )
    assert model.engine_route_timeouts([route], VLLM) == []
    assert [r.name for r in model.engine_routes([route], VLLM)] == ["api"]
