"""The write-ups' failure modes, each on its own in a namespace of its own, a healthy baseline, and their
complete example (all of it at once), as worlds for tests/diagnose/replay.py."""

from __future__ import annotations

from dataclasses import replace

from tests.diagnose.replay import (
    Autoscaler,
    EmptyQuery,
    Engine,
    GatewayTenant,
    Node,
    Pending,
    Route,
    Workload,
    World,
)

# 6 free GPUs as 2/2/1/1 on four nodes, and a cordoned node whose 4 free GPUs no pod may use
NODES = [Node("gpu-a", 2), Node("gpu-b", 2), Node("gpu-c", 1), Node("gpu-d", 1), Node("gpu-e", 4, schedulable=False)]


def slow(engine: Engine) -> Engine:
    """A first token after 4 s, 90 % of it in the queue."""
    return replace(engine, ttft=4.0, queue=3.6)


def _service(ns: str, pods: tuple[str, ...], engines: list[Engine], **kw: object) -> World:
    """A model served by workload `vllm` in `ns`, its pods, an HPA with room and a route with a long timeout."""
    autoscaler = Autoscaler(ns, "vllm", "vllm", desired=len(pods), minimum=1, maximum=len(pods) + 2)
    world = World(
        engines=engines,
        workloads=[Workload(ns, "vllm", pods)],
        autoscalers=[kw.pop("autoscaler", autoscaler)],  # type: ignore[list-item]
        routes=[kw.pop("route", Route(ns, "vllm"))],  # type: ignore[list-item]
    )
    assert not kw, kw
    return world


def healthy(ns: str = "healthy") -> World:
    return _service(ns, ("vllm-0", "vllm-1"), [Engine(ns, "vllm-0"), Engine(ns, "vllm-1")])


def routing(ns: str = "routing") -> World:
    """Three heavy prompts on one pod: round-robin over unequal requests."""
    engines = [slow(Engine(ns, "vllm-0", waiting=9)), Engine(ns, "vllm-1"), Engine(ns, "vllm-2")]
    return _service(ns, ("vllm-0", "vllm-1", "vllm-2"), engines)


def maxed(ns: str = "maxed") -> World:
    """The queue grows with the autoscaler at its maximum."""
    engines = [slow(Engine(ns, "vllm-0", waiting=5)), slow(Engine(ns, "vllm-1", waiting=5))]
    autoscaler = Autoscaler(ns, "vllm", "vllm", desired=2, minimum=1, maximum=2)
    return _service(ns, ("vllm-0", "vllm-1"), engines, autoscaler=autoscaler)


def renamed_trigger(ns: str = "keda") -> World:
    """A KEDA ScaledObject whose query reads a metric a vLLM release renamed: it sees 0, holds the minimum."""
    engines = [slow(Engine(ns, "vllm-0", waiting=6, waiting_growth=0.2))]
    autoscaler = Autoscaler(ns, "vllm", "vllm", "keda", desired=1, minimum=1, maximum=5)
    world = _service(ns, ("vllm-0",), engines, autoscaler=autoscaler)
    world.empty_queries.append(EmptyQuery(ns, "vllm"))
    return world


def fragmented(ns: str = "placement") -> World:
    """A 4-GPU replica Pending on 2/2/1/1 free GPUs."""
    engines = [slow(Engine(ns, "vllm-0", waiting=8))]
    world = _service(ns, ("vllm-0",), engines)
    world.workloads[0] = Workload(ns, "vllm", ("vllm-0", "vllm-1"), starting=1, starting_oldest=300)
    world.autoscalers[0] = Autoscaler(ns, "vllm", "vllm", desired=2, minimum=1, maximum=3)
    world.pending.append(Pending(ns, "vllm-1", 4))
    return world


def kv_bound(ns: str = "kv") -> World:
    """The engine's KV cache is full: requests wait for blocks and running ones are preempted."""
    engines = [slow(Engine(ns, f"vllm-{i}", waiting=3, kv=0.97, preemptions=0.5)) for i in range(2)]
    return _service(ns, ("vllm-0", "vllm-1"), engines)


def ingress_timeout(ns: str = "ingress") -> World:
    """ingress-nginx's default 60 s read timeout in front of 90 s answers."""
    engines = [Engine(ns, f"vllm-{i}", duration=90, decode=88) for i in range(2)]
    return _service(ns, ("vllm-0", "vllm-1"), engines, route=Route(ns, "vllm", timeout=60, source="default"))


def incident(ns: str = "incident") -> World:
    """The write-ups' complete example: the ScaledObject reads a renamed metric and holds the minimum, the
    replica it does ask for is Pending on 2/2/1/1, and the ingress cuts 90 s answers at 60 s."""
    engines = [slow(Engine(ns, "vllm-0", waiting=11, duration=90, decode=85))]
    world = _service(
        ns,
        ("vllm-0", "vllm-1"),
        engines,
        autoscaler=Autoscaler(ns, "vllm", "vllm", "keda", desired=2, minimum=2, maximum=6),
        route=Route(ns, "vllm", timeout=60, source="default"),
    )
    world.workloads[0] = Workload(ns, "vllm", ("vllm-0", "vllm-1"), starting=1, starting_oldest=300)
    world.empty_queries.append(EmptyQuery(ns, "vllm"))
    world.pending.append(Pending(ns, "vllm-1", 4))
    return world


def renamed_metric(ns: str = "renamed") -> World:
    """An engine release renamed the queue's metric: the exporter's mapping does not know the new name."""
    return _service(ns, ("vllm-0",), [slow(Engine(ns, "vllm-0", missing=("llm_requests_waiting",)))])


def tenant_load(ns: str = "tenants") -> World:
    """A model that queues behind a gateway where one tenant sends 70 % of its tokens (no other model is named
    chat: the gateway's series have no namespace)."""
    world = _service(ns, ("vllm-0",), [slow(Engine(ns, "vllm-0", model="chat", waiting=12))])
    world.gateway_tenants += [GatewayTenant("team-a", "chat", 700), GatewayTenant("team-b", "chat", 300)]
    return world


FAILURE_MODES = {
    "routing": (routing, "routing.queue_skew"),
    "maxed": (maxed, "scaling.autoscaler_at_max"),
    "keda": (renamed_trigger, "scaling.autoscaler_query_empty"),
    "placement": (fragmented, "placement.fragmented"),
    "kv": (kv_bound, "engine.kv_capacity"),
    "ingress": (ingress_timeout, "ingress.route_timeout"),
}

INCIDENT_ORDER = ["scaling.autoscaler_query_empty", "placement.fragmented", "ingress.route_timeout"]


def everything() -> World:
    """Every namespace above in one cluster (the nodes are the cluster's)."""
    world = World(nodes=list(NODES))
    for make in (healthy, incident, renamed_metric, tenant_load, *(m for m, _ in FAILURE_MODES.values())):
        world.add(make())
    return world
