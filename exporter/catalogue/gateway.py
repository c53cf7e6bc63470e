"""Gateway metrics (node role): tokens, requests, spend and budgets per tenant, from LLM gateways (LiteLLM,
Envoy AI Gateway), and the requests each tenant has queued in the endpoint picker's flow control.

The tenant is the first gateway label of `gateways.tenant_labels` that is set; at most
`gateways.max_tenants_per_model` tenants per model keep their name, the rest are counted as tenant="other".
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from exporter.catalogue.spec import MetricSpec, Stability, counter, gauge

SOURCE = ("gateway", "kind")
TENANT = ("gateway", "tenant", "model")

_c = partial(counter, subsystem="gateway", role="node", stability=Stability.EXPERIMENTAL)
_g = partial(gauge, subsystem="gateway", role="node", stability=Stability.EXPERIMENTAL)

TOKENS = _c(
    "llm_gateway_tokens_total",
    'Tokens the gateway counted for a tenant and model, from the usage the engine returned (direction: "prompt" '
    'or "generation"). tenant="other": the tenants past the top N of the model, summed. With '
    'gateways.request_kind_labels set, also by request_kind: one of gateways.request_kinds, "other" for an '
    'unlisted one, "none" where no such label is set.',
    (*TENANT, "direction"),
)
# the same family when gateways.request_kind_labels is set (one name, one help text: not a family of its own)
TOKENS_BY_KIND = replace(TOKENS, labels=(*TOKENS.labels, "request_kind"))
REQUESTS = _c(
    "llm_gateway_requests_total",
    'Requests the gateway answered for a tenant and model, by outcome ("success", "rate_limited", '
    '"client_error", "server_error", "unknown" without a status code, or "error": failed, with no class from '
    "the gateway, as Envoy AI Gateway reports failures).",
    (*TENANT, "outcome"),
)
SPEND = _c(
    "llm_gateway_spend_total",
    "What the gateway charged a tenant for a model, in `currency` (LiteLLM: USD, from its model price map; "
    "Envoy AI Gateway reports none).",
    (*TENANT, "currency"),
)
BUDGET_REMAINING = _g(
    "llm_gateway_budget_remaining",
    "What is left of a budget the gateway enforces, in `currency` (scope: team, key, user or end_user; "
    "tenant: the budget holder's name; per scope the gateways.max_tenants_per_model holders with the least "
    "left). No series for a holder without a budget.",
    ("gateway", "scope", "tenant", "currency"),
)
BUDGET_LIMIT = _g(
    "llm_gateway_budget_limit",
    "The budget the gateway enforces on a holder, in `currency` (scope and tenant as for the remaining budget).",
    ("gateway", "scope", "tenant", "currency"),
)
QUEUED = _g(
    "llm_gateway_queued_requests",
    "Requests of a tenant the gateway holds in its queue in front of the model's pool now (the endpoint "
    "picker's flow control: from enqueue until dispatched, rejected or evicted; tenant: the request's fairness "
    'id, "default-flow" without one; model: the model sent to the pool, "" where the release names none). '
    'tenant="other": the tenants past the top N of the model by requests held, summed.',
    (*TENANT, "priority"),
)
TENANTS_FOLDED = _g(
    "llm_gateway_tenants_folded",
    'Tenants of a model counted as tenant="other" at this scrape: active, but past the top '
    "gateways.max_tenants_per_model by tokens (by requests queued, for a gateway that queues).",
    ("gateway", "model"),
)
TENANTS_IDLE = _g(
    "llm_gateway_tenants_idle",
    "Tenants of a model whose counts did not move for gateways.tenant_idle_seconds: no longer exported by name "
    '(nor in tenant="other") until they move again.',
    ("gateway", "model"),
)
SERIES_DROPPED = _g(
    "llm_gateway_series_dropped",
    "Gateway samples left out at this scrape, by reason (no_model: not a model's request, e.g. a refused "
    "scrape; no_tenant: none of gateways.tenant_labels set; not_per_request: a request count of a release that "
    "counts no requests (Envoy AI Gateway up to v0.3.0); tenant_too_long: a tenant name over 128 characters, "
    'counted as tenant="other"; budget_unnamed: a budget whose holder has no name '
    "but a key's hash; budget_over_limit: past gateways.max_tenants_per_model budgets of a scope, those with "
    "the most left).",
    ("gateway", "reason"),
)
UP = _g("llm_gateway_up", "1 when the last scrape of the gateway's metrics succeeded.", SOURCE)
SCRAPE_ERROR = _g(
    "llm_gateway_scrape_error",
    "1 for the reason the last scrape of the gateway failed (timeout, connect, http_status, too_large, "
    "protocol, credentials, parse, unknown_kind).",
    (*SOURCE, "reason"),
)

METRICS: tuple[MetricSpec, ...] = (
    TOKENS,
    REQUESTS,
    SPEND,
    BUDGET_REMAINING,
    BUDGET_LIMIT,
    QUEUED,
    TENANTS_FOLDED,
    TENANTS_IDLE,
    SERIES_DROPPED,
    UP,
    SCRAPE_ERROR,
)
