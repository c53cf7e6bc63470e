"""Tenant recording rules (`llm-inference.tenants`): who used each model and what it cost, from the gateway's
tokens per tenant joined to the GPUs the model's engine pods hold (`llm-inference.cost`).

Engines know no tenant and the gateway knows no GPU; the join is the model name. Over the last hour:

- `llm:gateway_tokens:rate1h{gateway, tenant, model, direction}`: the tenant's tokens per second through one
  gateway (direction `prompt` or `generation`), the highest of the exporters that read that gateway (every
  node-role pod with the same `gateways.targets` reads it: one count, not one per pod).
- `llm:model_gateway_tokens:rate1h{model, direction}`: those summed over every tenant and gateway.
- `llm:tenant_token_share:ratio_rate1h{gateway, tenant, model, direction}`: the tenant's share (0-1) of the
  model's gateway tokens of that direction. A tenant whose counters did not move in the hour has 0; a model
  without gateway tokens in the hour has no sample.
- `llm:model_phase_share:ratio_rate1h{model, direction}`: how the model's engines split their request time
  between prefill (`prompt`) and decode (`generation`): the sums of the engines' per-request prefill and decode
  times (vLLM, TensorRT-LLM, LMDeploy). An engine that times neither (SGLang, TGI, llama.cpp) splits by its
  prompt and generation tokens instead. A thousand prompt tokens are prefilled in a few steps, a thousand
  generated ones take a thousand decode steps: a prompt token costs less. With continuous batching requests
  overlap: this is request time (how long a request holds its batch slot and KV cache), not GPU time.
- `llm:tenant_gpus_allocated{gateway, tenant, model, direction}`: the model's GPU-seconds per second
  (`llm:model_gpus_allocated`) times the phase share times the tenant's share: the tenant's part of the GPUs
  the model holds. Summed over tenants and directions it is the GPUs of the model (all of them: the engine's
  idle time and the traffic that bypasses the gateway are paid by the gateway's tenants, pro rata).
- `llm:tenant_cost_per_second{gateway, tenant, model, direction, currency}`: the same with the model's cost
  (`llm:model_cost_per_second`): no price for the model's GPUs, no sample (the tokens and GPUs still are).
- `llm:tenant_cost_per_million_tokens:rate1h{gateway, tenant, model, currency}`: the tenant's cost over its
  tokens of both directions: a tenant that sends long prompts and asks for short answers pays less a token.
- `llm:gateway_request_kind_tokens:rate1h{gateway, tenant, model, direction, request_kind}`: the tenant's
  tokens per second of one request kind, where the exporters split tokens by kind (`gateways.request_kind_labels`:
  a route, a tag, a header the gateway maps to a label); no sample where they do not.
- `llm:tenant_request_kind_cost_per_second{gateway, tenant, model, direction, request_kind, currency}`: the
  tenant's cost of a direction split by its tokens of each kind (a prompt token of one kind costs what one of
  another does: the engine's time is not timed per kind).
- `llm:tenant_request_kind_cost_per_million_tokens:rate1h{gateway, tenant, model, request_kind, currency}`:
  that cost over the kind's tokens of both directions.
- `llm:model_gateway_token_coverage:ratio_rate1h{model}`: the gateway's tokens of an engine model over the
  engine's own: about 1 when every request goes through the gateway under that name, 0 when the gateway
  counts none under the engine's name (a name that does not match); none for an engine that labels no model.

The model names must match: the gateway's `model` (LiteLLM: the model its deployment asks the engine for, the
`model` of `litellm_params` less its provider prefix: `openai/llama-3-8b` is `llama-3-8b`) and the engine's
`model`, from its `model_name` label (vLLM and SGLang: the first `--served-model-name`, else the path it
loaded; TGI and llama.cpp label no model, `model=""`, and join no gateway model). A gateway model no engine
serves under that name joins nothing: it has tokens and shares but no GPUs and no cost, never a wrong one.
Engine models of one name in several namespaces are one model to the join (their GPUs summed).
"""

from __future__ import annotations

from alerts.model import Recording
from alerts.recordings.cost import COST, GPUS_ALLOCATED
from alerts.thresholds import Thresholds
from exporter.promql.gateway import REQUEST_KIND, once_per_gateway

TENANT_GROUP = "llm-inference.tenants"
WINDOW = "1h"
TENANT = "gateway, tenant, model"
TOKENS = "llm:gateway_tokens:rate1h"
MODEL_TOKENS = "llm:model_gateway_tokens:rate1h"
SHARE = "llm:tenant_token_share:ratio_rate1h"
PHASE = "llm:model_phase_share:ratio_rate1h"
TENANT_COST = "llm:tenant_cost_per_second"
KIND = REQUEST_KIND
KIND_TOKENS = "llm:gateway_request_kind_tokens:rate1h"
KIND_COST = "llm:tenant_request_kind_cost_per_second"
# direction -> (the engine's histogram of that phase's time per request, its token counter)
PHASES = {
    "prompt": ("llm_request_prefill_time_seconds", "llm_prompt_tokens_total"),
    "generation": ("llm_request_decode_time_seconds", "llm_generation_tokens_total"),
}


def _per_model(metric: str) -> str:
    return f"sum by (model) (rate({metric}[{WINDOW}]))"


def _phase_share(direction: str) -> str:
    """The share of `direction`'s phase in the model's request time, else in its tokens."""
    (time, tokens), (other_time, other_tokens) = PHASES[direction], *(v for k, v in PHASES.items() if k != direction)
    by_time = f"{_per_model(time + '_sum')} / ({_per_model(time + '_sum')} + {_per_model(other_time + '_sum')} > 0)"
    by_tokens = f"{_per_model(tokens)} / ({_per_model(tokens)} + {_per_model(other_tokens)} > 0)"
    return f"({by_time}) or ({by_tokens})"


def _tenant_part(of: str, keep: str = "") -> str:
    """The tenant's share of its direction times the phase share times the model's `of` (summed by `model` and
    `keep`)."""
    by = f"model, {keep}" if keep else "model"
    return (
        f"{SHARE} * on (model, direction) group_left () {PHASE} * on (model) group_left ({keep}) sum by ({by}) ({of})"
    )


def recordings(t: Thresholds) -> list[Recording]:
    del t  # no threshold: the window is in the names
    # an engine that labels no model (TGI, llama.cpp) has no name to match: no coverage either
    engine_tokens = " + on (model) ".join(_per_model(c + '{model!=""}') for _, c in PHASES.values())
    return [
        # the kinds of one exporter summed before the highest exporter is kept: a count of each tenant, once
        Recording(
            TOKENS,
            TENANT_GROUP,
            once_per_gateway(f"rate(llm_gateway_tokens_total[{WINDOW}])", f"{TENANT}, direction"),
        ),
        Recording(MODEL_TOKENS, TENANT_GROUP, f"sum by (model, direction) ({TOKENS})"),
        Recording(
            SHARE,
            TENANT_GROUP,
            f"{TOKENS} / on (model, direction) group_left () ({MODEL_TOKENS} > 0)",
        ),
        *(Recording(PHASE, TENANT_GROUP, _phase_share(direction), (("direction", direction),)) for direction in PHASES),
        Recording("llm:tenant_gpus_allocated", TENANT_GROUP, _tenant_part(GPUS_ALLOCATED)),
        Recording(TENANT_COST, TENANT_GROUP, _tenant_part(COST, "currency")),
        Recording(
            "llm:tenant_cost_per_million_tokens:rate1h",
            TENANT_GROUP,
            f"sum by ({TENANT}, currency) ({TENANT_COST}) / on ({TENANT}) group_left ()"
            f" (sum by ({TENANT}) ({TOKENS}) > 0) * 1e6",
        ),
        Recording(
            KIND_TOKENS,
            TENANT_GROUP,
            f'max by ({TENANT}, direction, {KIND}) (rate(llm_gateway_tokens_total{{{KIND}!=""}}[{WINDOW}]))',
        ),
        Recording(
            KIND_COST,
            TENANT_GROUP,
            f"{KIND_TOKENS} / on ({TENANT}, direction) group_left () ({TOKENS} > 0)"
            f" * on ({TENANT}, direction) group_left (currency) {TENANT_COST}",
        ),
        Recording(
            "llm:tenant_request_kind_cost_per_million_tokens:rate1h",
            TENANT_GROUP,
            f"sum by ({TENANT}, {KIND}, currency) ({KIND_COST}) / on ({TENANT}, {KIND}) group_left ()"
            f" (sum by ({TENANT}, {KIND}) ({KIND_TOKENS}) > 0) * 1e6",
        ),
        # 0, not absent, for an engine model the gateway counts nothing of: the name that did not match
        Recording(
            "llm:model_gateway_token_coverage:ratio_rate1h",
            TENANT_GROUP,
            f"(sum by (model) ({MODEL_TOKENS}) or 0 * ({engine_tokens})) / on (model) ({engine_tokens} > 0)",
        ),
    ]
