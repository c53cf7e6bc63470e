"""Waiting: which tenant brings most of a queueing model's work, when a gateway tells (`llm_gateway_*`, gateways
role). Context for a queue, not its cause: the queue is a capacity question whoever sends the load.

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

NAMED = 'tenant!="other"'
MOST = 0.5  # a share above this is "most" of the model's tokens


def _once(matcher: str = "") -> str:
    """The tokens per second of each (tenant, model, direction), once per gateway (the request kinds of one
    exporter summed first, where its tokens carry them)."""
    rate = f"rate(llm_gateway_tokens_total{{{matcher}}}[$W])"
    return f"max by (gateway, tenant, model, direction) (sum without (request_kind) ({rate}))"


def queries(limits: Limits) -> dict[str, str]:
    return {
        "share": f"sum by (model, tenant) ({_once(NAMED)}) / on (model) group_left () (sum by (model) ({_once()}) > 0)",
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    del earlier  # context for every queueing model, whatever explains the queue
    q = VERDICT.qid
    top: dict[str, tuple[float, str]] = {}
    for s in r.samples(q("share")):
        model, tenant, share = s.label("model"), s.label("tenant"), s.value
        if share > top.get(model, (0.0, ""))[0]:  # NaN is never greater
            top[model] = (share, tenant)
    out = []
    for wait in who_waits(r):
        if not wait.queueing or wait.model not in top:
            continue
        share, tenant = top[wait.model]
        if share <= MOST:
            continue
        out.append(
            VERDICT.finding(
                f"{wait.namespace}/{wait.model} queues and tenant {tenant} sent {percent(share)} of its tokens through "
                "the gateway over the window (prompt and generated)",
                [r.evidence(q("share"), share)],
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
    "key's, team's or user's rpm_limit and tpm_limit; Envoy AI Gateway: a rate limit on the tenant header), or add "
    "replicas for the load as it is.",
    queries=queries,
    judge=judge,
)
