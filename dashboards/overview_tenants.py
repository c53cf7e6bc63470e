"""The overview's tenants row: who used each model and what it cost, from the gateway's counts per tenant
(`llm_gateway_*`) and the `llm-inference.tenants` recording rules. A row of `overview.dashboard.py`, last.

Gateway series carry no namespace: the row filters on the model variable only, whose names are the engines'
(a gateway model of another name shows under "All").
"""

from __future__ import annotations

from dashboards.lib import Query, Row, timeseries
from exporter.promql.gateway import once_per_gateway

_MODEL = 'model=~"$model"'
_TOP = 10


def _once(metric: str, labels: str) -> str:
    """The rate of a gateway counter, once per gateway whatever the number of exporters that read it (the
    request kinds of one exporter summed first, where its tokens carry them)."""
    return once_per_gateway(f"rate({metric}{{{_MODEL}}}[$__rate_interval])", labels)


def _queued() -> str:
    """The requests each (tenant, model) holds in a gateway's queue now, once per gateway (the priorities one
    exporter splits it into summed first)."""
    return once_per_gateway(f"llm_gateway_queued_requests{{{_MODEL}}}", "gateway, tenant, model", split="priority")


tenants = Row(
    "Tenants: who used it, and what did it cost?",
    [
        timeseries(
            "Top tenants by tokens",
            [
                Query(
                    f"topk({_TOP}, sum by (gateway, tenant) "
                    f"({_once('llm_gateway_tokens_total', 'gateway, tenant, model, direction')}))",
                    "{{gateway}}/{{tenant}}",
                )
            ],
            unit="suffix:tok/s",  # seen rendered with "short": a bare number, read as a count of tokens
            width=12,
            description="Tokens per second (prompt and generated) the gateway counted for its busiest tenants, "
            'from the usage the engines returned. tenant="other" sums the tenants past the exporter\'s '
            "gateways.max_tenants_per_model. One tenant far above the rest is where a capacity or budget problem "
            "starts: check its models below.",
        ),
        timeseries(
            "Top tenants by cost",
            [
                Query(
                    f"topk({_TOP}, sum by (gateway, tenant, currency) (llm:tenant_cost_per_second{{{_MODEL}}})) * 3600",
                    "{{gateway}}/{{tenant}} ({{currency}} per hour)",
                )
            ],
            unit="short",
            width=12,
            description="What the GPUs serving each tenant cost per hour: the tenant's share of each model's "
            "gateway tokens (prompt and generation apart, weighted by the engine's prefill and decode time) times "
            "the model's cost from cost.gpu_hour_prices. No price set, or a gateway model no engine serves under "
            "that name: no line. Compare with the gateway's own charge, llm_gateway_spend_total.",
        ),
        timeseries(
            "Share of GPU time per tenant",
            [
                Query(
                    f"sum by (gateway, tenant) (llm:tenant_gpus_allocated{{{_MODEL}}}) / on () group_left () "
                    f"sum (llm:model_gpus_allocated{{{_MODEL}}})",
                    "{{gateway}}/{{tenant}}",
                )
            ],
            unit="percentunit",
            max_value=1,
            stacked=True,
            description="Each tenant's part of the GPUs the engines hold (GPU-seconds per second), over all of "
            "them. The stack stays under 100% by the GPUs of models no gateway fronts, or whose names do not "
            "match the gateway's (see the token coverage panel).",
        ),
        timeseries(
            "Gateway requests by outcome",
            [
                Query(
                    f"sum by (outcome) ({_once('llm_gateway_requests_total', 'gateway, tenant, model, outcome')})",
                    "{{outcome}}",
                )
            ],
            unit="reqps",
            stacked=True,
            description="Requests per second the gateway answered, by outcome: success, rate_limited (429: a "
            "tenant's rpm/tpm limit), client_error (4xx, also a spent budget), server_error (5xx: the engine or "
            "the gateway failed). A growing error band is a tenant retrying or an engine failing.",
        ),
        timeseries(
            "Cost per million tokens per tenant",
            [
                Query(
                    f"topk({_TOP}, llm:tenant_cost_per_million_tokens:rate1h{{{_MODEL}}})",
                    "{{gateway}}/{{tenant}} {{model}} ({{currency}})",
                )
            ],
            unit="short",
            description="What a million of the tenant's tokens of one model cost over the last hour: tenants "
            "that send long prompts for short answers pay less a token than those that generate long answers, "
            "as the engine spends its time decoding.",
        ),
        timeseries(
            "Requests queued at the gateway, by tenant",
            [
                Query(
                    f"topk({_TOP}, sum by (gateway, tenant) ({_queued()}))",
                    "{{gateway}}/{{tenant}}",
                )
            ],
            unit="short",
            width=12,
            description="Requests each tenant has waiting in the endpoint picker's flow control queue now, in "
            "front of the model's pool (Gateway API Inference Extension from v1.1.0, flow control on): from enqueue "
            "until dispatched to a model server, rejected or evicted, all priorities summed. The tenant is the "
            'fairness id: "default-flow" for requests without the x-gateway-inference-fairness-id header, "other" '
            'the tenants past gateways.max_tenants_per_model. Before v1.3.0 the queue names no model (model=""): '
            "it shows only with All models. Empty without an endpoint picker (LiteLLM and Envoy AI Gateway have no "
            "such queue). A tenant holding more than half of a queueing model's queue over the window (not "
            '"default-flow" or "other") is the one the waiting.tenant diagnosis names.',
        ),
        timeseries(
            "Gateway token coverage per model",
            [
                Query(
                    f"llm:model_gateway_token_coverage:ratio_rate1h{{{_MODEL}}}",
                    "{{model}}",
                )
            ],
            unit="percentunit",
            width=12,
            description="The gateway's tokens of each engine model over the engine's own, last hour. Near 100%: "
            "all traffic goes through the gateway. 0: the gateway counts nothing under the engine's model name "
            "(its model must be the engine's served model name): no tenant gets a cost for that model.",
        ),
    ],
)
