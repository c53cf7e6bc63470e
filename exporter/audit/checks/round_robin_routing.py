"""round-robin-routing: several replicas behind a Service, with nothing aware of their queues or caches."""

from __future__ import annotations

import re

from exporter.audit.base import Check, Outcome, Subject, fail, na, ok, unknown
from exporter.audit.model import Surroundings, autoscalers_of, max_replicas, pools_of, services_of
from exporter.audit.recognise import is_router

_ROUTING_LOGIC = re.compile(r"--routing-logic(?:=|\s+)(\S+)")


def _router_logics(subject: Subject, around: Surroundings) -> list[str]:
    """The routing logic of vLLM production-stack routers in the workload's namespace."""
    logics = []
    for w in around.workloads:
        if w.namespace != subject.workload.namespace:
            continue
        for c in (c for pod in w.pods for c in pod.containers if is_router(c)):
            found = _ROUTING_LOGIC.search(" ".join(c.argv))
            if found:
                logics.append(found.group(1).strip("\"'"))
    return logics


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    w = subject.workload
    most = max_replicas(w, autoscalers_of(w, around))
    if most is not None and most <= 1:
        return na("one replica at most: nothing to balance")
    if w.routed_by:  # the operator's own router picks the replica (e.g. Ray Serve's), whatever the Service
        return ok(w.routed_by + " picks each request's replica")
    pools = pools_of(w, around)
    if pools:
        return ok("InferencePool " + ", ".join(p.name for p in pools) + " routes by queue and cache")
    logics = _router_logics(subject, around)
    if logics:
        if any(logic in ("roundrobin", "round-robin", "round_robin") for logic in logics):
            return fail("the router in its namespace uses --routing-logic roundrobin")
        return ok("router with --routing-logic " + ", ".join(sorted(set(logics))))
    services = services_of(w, around)
    if not services:
        return unknown("no Service, InferencePool or router in view selects its pods")
    return fail("reached through Service " + ", ".join(s.name for s in services) + " only (per-connection balancing)")


CHECK = Check(
    id="round-robin-routing",
    severity="info",
    reason="Requests differ in cost by 50×, so round-robin piles heavy prompts on one replica, a Service "
    "balances connections not requests, and it throws away the prefix cache a replica already holds.",
    fix="Route through an inference-aware balancer: a Gateway API Inference Extension InferencePool (llm-d), "
    "or a router with session/prefix/KV-aware routing (vLLM production-stack --routing-logic prefixaware).",
    reads=("Service", "InferencePool", "Deployment"),
    evaluate=evaluate,
    engine_agnostic=True,
)
