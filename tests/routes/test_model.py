"""Route timeouts from Ingress and HTTPRoute objects, as ingress-nginx and the Gateway API define them."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.exposition import render
from exporter.replicas.startup import PodStart, pod_start
from exporter.routes import model
from exporter.routes.collector import families

NS = "llm"


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
    assert model.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "1d", "s", "10 s", "-1s", "1.5.2s"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        model.parse_duration(text)


def test_ingress_nginx_read_timeout_annotation_default_and_buffering() -> None:
    given = model.ingress_record(
        ingress("chat", "vllm", {model.NGINX + "proxy-read-timeout": "600", model.NGINX + "proxy-buffering": "on"}),
        60.0,
    )
    assert given == model.Route("Ingress", NS, "chat", ((("vllm",), 600.0, "annotation"),), True)
    unset = model.ingress_record(ingress("chat", "vllm"), 60.0)
    assert unset.rules == ((("vllm",), 60.0, "default"),) and unset.buffering is False
    # ingress-nginx ignores a value it cannot read and keeps its default
    bad = model.ingress_record(ingress("chat", "vllm", {model.NGINX + "proxy-read-timeout": "ten"}), 60.0)
    assert bad.rules == ((("vllm",), 60.0, "default"),)


def test_httproute_the_shorter_of_request_and_backend_request_cuts_first() -> None:
    route = model.httproute_record(
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
        None,
    )
    assert route.rules == (
        (("vllm",), 120.0, "spec"),
        (("web",), None, "spec"),
        (("other",), None, "default"),
        ((), None, "default"),
    )


def test_only_routes_reaching_an_engine_service_count_with_their_shortest_timeout() -> None:
    services = [
        model.Service(NS, "vllm", (("app", "vllm"),)),
        model.Service(NS, "web", (("app", "web"),)),
        model.Service(NS, "headless", ()),  # selects nothing
        model.Service("other", "vllm", (("app", "vllm"),)),  # no engine pod in its namespace
    ]
    pods = [PodStart("u1", NS, "vllm", 0.0, None, None, (("app", "vllm"), ("pod-template-hash", "abc")))]
    engines = model.engine_services(services, pods)
    assert engines == {(NS, "vllm")}
    routes = [
        model.Route("HTTPRoute", NS, "chat", ((("vllm",), 300.0, "spec"), (("vllm", "web"), 120.0, "spec")), None),
        model.Route("Ingress", NS, "site", ((("web",), 60.0, "default"),), False),
        model.Route("HTTPRoute", NS, "unlimited", ((("vllm",), None, "spec"),), None),
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
    timeouts = [model.RouteTimeout("Ingress", NS, "chat", 60.0, "default")]
    routes = [
        model.Route("Ingress", NS, "chat", ((("vllm",), 60.0, "default"),), True),
        model.Route("HTTPRoute", NS, "api", ((("vllm",), None, "spec"),), None),
    ]
    assert render(families(timeouts, routes)) == (
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
    annotations = {model.HAPROXY_TIMEOUT: timeout} if timeout is not None else {}
    return {
        "metadata": {"namespace": NS, "name": name, "annotations": annotations},
        "spec": {"host": "chat.apps.example.com", "to": {"kind": "Service", "name": service, "weight": 100},
                 "alternateBackends": [{"kind": "Service", "name": f"{service}-canary", "weight": 10}]},
    }  # fmt: skip


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("5m", 300), ("2h", 7200), ("500ms", 0.5), ("90000", 90)])
def test_haproxy_times(text: str, seconds: float) -> None:
    assert model.haproxy_timeout(text) == seconds


def test_openshift_route_timeout_annotation_and_the_routers_default() -> None:
    default = model.OPENSHIFT_DEFAULT_TIMEOUT_SECONDS
    plain = model.openshift_route_record(openshift_route("plain", "vllm"), default)
    assert plain.rules == ((("vllm", "vllm-canary"), 30.0, "default"),)
    assert plain.buffering is None  # HAProxy streams; nothing to say per route
    long = model.openshift_route_record(openshift_route("long", "vllm", "10m"), default)
    assert long.rules[0][1:] == (600.0, "annotation")
    broken = model.openshift_route_record(openshift_route("broken", "vllm", "ten minutes"), default)
    assert broken.rules[0][1:] == (30.0, "default")  # the router ignores it too
    timeouts = model.engine_route_timeouts([plain, long], {(NS, "vllm")})
    assert [(t.kind, t.name, t.timeout_seconds) for t in timeouts] == [
        ("Route", "long", 600.0),
        ("Route", "plain", 30.0),
    ]
