"""Waiting: which tenant brings most of a queueing model's work, when a gateway tells (`llm_gateway_*`, gateways
role). Context for a queue, not its cause: the queue is a capacity question whoever sends the load.

Where the endpoint picker's flow control queues in front of the model's pool (`llm_gateway_queued_requests`,
per fairness id), the tenant named is the one holding most of that queue over the window (its requests waiting,
averaged over the window): the queue itself, per tenant, is better evidence than a share of tokens, so a model
with such a queue is judged by it alone. Fairness id "default-flow" (requests without one) is in the whole but
never named, as "other" is. Without such a queue the share of tokens is used:

Neither gateway exposes what a tenant has in flight: LiteLLM's `litellm_in_flight_requests` counts the proxy's
HTTP requests with no model or tenant label, and Envoy AI Gateway records a request when it ends. What both tell
per tenant and model is tokens (`llm_gateway_tokens_total`, prompt and generated) and requests. The share named
is of the tokens over the window: a request's prompt is its prefill and its answer the decode steps it holds a
batch slot for, so the tenant with most of the tokens holds most of the engines' time, and of the queue it
leaves. Requests would not do: LiteLLM counts them under the name the client asked (`requested_model`), its
tokens under the deployment's model, the engine's name.

The model is the gateway's `model`, joined to the engine's `model` by name as the tenant cost rules are
(`alerts/recordings/tenants.py`, docs/gateways.md). Every exporter pod that reads a gateway reports it: the
highest of them counts, once. Tenant "other" (the tenants past `gateways.max_tenants_per_model`) is in the whole
but never named."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, percent
from exporter.diagnose.verdicts.waiting import who_waits
from exporter.promql.gateway import once_per_gateway

NAMED = 'tenant!="other"'
QUEUE_NAMED = 'tenant!~"other|default-flow"'  # the EPP's fairness id of a request without one is no tenant
MOST = 0.5  # a share above this is "most" of the model's tokens


def _once(matcher: str = "") -> str:
    """The tokens per second of each (tenant, model, direction), once per gateway (the request kinds of one
    exporter summed first, where its tokens carry them)."""
    return once_per_gateway(f"rate(llm_gateway_tokens_total{{{matcher}}}[$W])", "gateway, tenant, model, direction")


def _held(matcher: str = "") -> str:
    """The requests each (tenant, model) held in a gateway's queue, averaged over the window, once per gateway."""
    held = f"avg_over_time(llm_gateway_queued_requests{{{matcher}}}[$W])"
    return once_per_gateway(held, "gateway, tenant, model", split="priority")


def queries(limits: Limits) -> dict[str, str]:
    return {
        "share": f"sum by (model, tenant) ({_once(NAMED)}) / on (model) group_left () (sum by (model) ({_once()}) > 0)",
        "queue": f"sum by (model, tenant) ({_held(QUEUE_NAMED)}) / on (model) group_left () "
        f"(sum by (model) ({_held()}) > 0)",
        "queued": f"sum by (model) ({_held()}) > 0",  # the models with a queue, whoever's requests wait in it
    }


def _top(r: Readings, qid: str) -> dict[str, tuple[float, str]]:
    """Per model, the largest share and its tenant."""
    top: dict[str, tuple[float, str]] = {}
    for s in r.samples(qid):
        model, tenant, share = s.label("model"), s.label("tenant"), s.value
        if share > top.get(model, (0.0, ""))[0]:  # NaN is never greater
            top[model] = (share, tenant)
    return top


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    del earlier  # context for every queueing model, whatever explains the queue
    q = VERDICT.qid
    tokens, queued = _top(r, q("share")), _top(r, q("queue"))
    # a model with a queue in front of its pool: judged by it, a majority of tokens notwithstanding
    queues = {s.label("model") for s in r.samples(q("queued"))}
    out = []
    for wait in who_waits(r):
        if not wait.queueing:
            continue
        by_queue = wait.model in queues
        share, tenant = (queued if by_queue else tokens).get(wait.model, (0.0, ""))
        if share <= MOST:
            continue
        what = (
            f"held {percent(share)} of the requests waiting in the gateway's queue in front of its pool"
            if by_queue
            else f"sent {percent(share)} of its tokens through the gateway"
        )
        out.append(
            VERDICT.finding(
                f"{wait.namespace}/{wait.model} queues and tenant {tenant} {what} over the window"
                + ("" if by_queue else " (prompt and generated)"),
                [r.evidence(q("queue" if by_queue else "share"), share)],
                wait.namespace,
                wait.model,
                weight=share,
            )
        )
    return out


VERDICT = Verdict(
    id="waiting.tenant",
    stage="waiting",
    owner="platform",
    panel="Top tenants by tokens",
    fix="If that tenant's load is not meant to take the model's capacity, limit it at the gateway (LiteLLM: the "
    "key's, team's or user's rpm_limit and tpm_limit; Envoy AI Gateway: a rate limit on the tenant header; the "
    "endpoint picker: a lower priority in the InferenceObjective the tenant's requests name), or add replicas for "
    "the load as it is.",
    queries=queries,
    judge=judge,
)
