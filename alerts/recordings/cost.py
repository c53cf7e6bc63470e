"""Cost recording rules (`llm-inference.cost`): what the GPUs serving each model cost, per token.

The price reaches Prometheus from the cluster role's configuration (`cost.gpu_hour_prices`, one price per GPU
model as NVML names it): `llm_gpu_price_per_second{name, currency}`, the configured price per GPU-hour over
3600. No price is shipped: without one, the cost rules give no sample, the GPU-seconds and tokens per GPU-hour
still do.

- `llm:gpu_pod_share`: each pod's share of each GPU assigned to it, 1 over the pods that GPU is assigned to
  (time-slicing, MPS): a GPU two pods share counts half to each, so it is never paid twice.
- `llm:model_gpus_allocated`: the GPUs a model's pods hold, shares summed: GPU-seconds per second.
- `llm:model_tokens_per_gpu_hour:rate1h`: tokens (prompt + generated) per GPU-hour held.
- `llm:gpu_price_per_second`: each GPU with the configured price of its model.
- `llm:model_cost_per_second`, `llm:model_cost_per_million_tokens:rate1h`: the cost of those shares, and
  over the tokens of the last hour.
- `llm:model_gpus_idle`, `llm:model_idle_cost_per_second`: the shares of engine pods that served no token in
  `cost_idle_window`: paid for, unused (0 while every pod of the model serves). GPUs held by pods that run no
  engine the exporter scrapes are not in these rules (`llm_gpu_allocated_idle` covers every pod).

A MIG instance counts as one GPU in the shares and has no price (its uuid is not a whole GPU of
`llm_gpu_info`): the cost of MIG-partitioned GPUs is not in these rules.
"""

from __future__ import annotations

from alerts.expr import MODEL
from alerts.model import Recording
from alerts.thresholds import Thresholds

COST_GROUP = "llm-inference.cost"
POD_SHARE = "llm:gpu_pod_share"
GPUS_ALLOCATED = "llm:model_gpus_allocated"
GPU_PRICE = "llm:gpu_price_per_second"
COST = "llm:model_cost_per_second"
# one model per pod (an engine pod serves one model; topk keeps a pod with two names from counting twice)
MODEL_OF_POD = "topk by (namespace, pod) (1, group by (namespace, pod, model) (llm_requests_running))"


def _tokens(window: str, by: str) -> str:
    return " + on ({by}) ".join(
        f"sum by ({by}) (increase({c}[{window}]))" for c in ("llm_prompt_tokens_total", "llm_generation_tokens_total")
    ).replace("{by}", by)


def recordings(t: Thresholds) -> list[Recording]:
    pods_on_gpu = "count by (uuid) (group by (uuid, namespace, pod) (llm_gpu_pod_info))"
    share = f"group by (node, gpu, uuid, namespace, pod) (llm_gpu_pod_info) / on (uuid) group_left () {pods_on_gpu}"
    per_model = f"{POD_SHARE} * on (namespace, pod) group_left (model) {MODEL_OF_POD}"
    price = (
        "max by (node, gpu, uuid, name, currency) (llm_gpu_info * on (name) group_left (currency)"
        " max by (name, currency) (llm_gpu_price_per_second))"
    )
    priced = f"{POD_SHARE} * on (uuid) group_left (currency) {GPU_PRICE}"
    tokens_1h = f"({_tokens('1h', MODEL)})"
    tokens_per_second = f"{tokens_1h} / 3600"
    # 1 for an engine pod that served no token in the window, 0 for one that did: the idle GPUs are 0, not
    # absent, while every pod serves (a flat line on the dashboard, not a gap)
    idle_pods = (
        f"{MODEL_OF_POD} * on (namespace, pod) group_left () "
        f"(({_tokens(t.cost_idle_window, 'namespace, pod')}) == bool 0)"
    )
    return [
        Recording(POD_SHARE, COST_GROUP, share),
        Recording(GPUS_ALLOCATED, COST_GROUP, f"sum by ({MODEL}) ({per_model})"),
        Recording(
            "llm:model_tokens_per_gpu_hour:rate1h",
            COST_GROUP,
            f"{tokens_1h} / on ({MODEL}) ({GPUS_ALLOCATED} > 0)",
        ),
        Recording(GPU_PRICE, COST_GROUP, price),
        Recording(
            COST,
            COST_GROUP,
            f"sum by ({MODEL}, currency) ({priced} * on (namespace, pod) group_left (model) {MODEL_OF_POD})",
        ),
        # the cost of the last hour over its tokens; no token: no sample
        Recording(
            "llm:model_cost_per_million_tokens:rate1h",
            COST_GROUP,
            f"avg_over_time({COST}[1h]) / on ({MODEL}) group_left () ({tokens_per_second} > 0) * 1e6",
        ),
        Recording(
            "llm:model_gpus_idle",
            COST_GROUP,
            f"sum by ({MODEL}) ({POD_SHARE} * on (namespace, pod) group_left (model) ({idle_pods}))",
        ),
        Recording(
            "llm:model_idle_cost_per_second",
            COST_GROUP,
            f"sum by ({MODEL}, currency) ({priced} * on (namespace, pod) group_left (model) ({idle_pods}))",
        ),
    ]
