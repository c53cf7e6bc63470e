"""Recording rules `llm-inference.capacity`: capacity in tokens, from the engines' own counts: tokens per second
per GPU (prompt and completion apart), KV headroom in tokens and how many requests at the context limit fit,
the context reserved against the p99 used, speculative decoding's acceptance, the load shed ratio, and the
model bandwidth and FLOPs utilisation (the engine's estimated bytes read and FLOPs per GPU over the GPU's peak
bandwidth and datasheet peak FLOPs, `llm_gpu_peak_flops`)."""

from __future__ import annotations

from alerts.expr import MODEL
from alerts.model import Recording
from alerts.recordings.bottleneck import bandwidth_utilization, flops_utilization
from alerts.thresholds import Thresholds

GROUP = "llm-inference.capacity"
RANK = "namespace, pod, dp_rank"  # one engine's KV cache: vLLM's capacity has no model label
MODEL_GPUS = "llm:model_gpus"
CONTEXT_USED_P99 = "llm:request_context_tokens:p99_1h"


def recordings(t: Thresholds) -> list[Recording]:
    # the GPUs serving each model: distinct uuids, so two pods time-sliced on one GPU count it once
    model_of_pod = "group by (namespace, pod, model) (llm_requests_running)"
    gpus = (
        f"count by ({MODEL}) (group by (namespace, model, uuid) (llm_gpu_pod_info"
        f" * on (namespace, pod) group_left (model) {model_of_pod}))"
    )
    out = [Recording(MODEL_GPUS, GROUP, gpus)]
    for kind, counter in (("prompt", "llm_prompt_tokens_total"), ("generation", "llm_generation_tokens_total")):
        out.append(
            Recording(
                f"llm:{kind}_tokens_per_gpu:rate5m",
                GROUP,
                f"sum by ({MODEL}) (rate({counter}[5m])) / on ({MODEL}) {MODEL_GPUS}",
            )
        )
    capacity = f"max by ({RANK}) (llm_kv_cache_capacity_tokens)"
    # tokens in use where the engine counts them (SGLang), else capacity times the free share (vLLM: a block
    # ratio, so the headroom is block-granular)
    headroom = (
        f"({capacity} - max by ({RANK}) (llm_kv_cache_used_tokens))"
        f" or ({capacity} * on ({RANK}) (1 - max by ({RANK}) (llm_kv_cache_usage_ratio)))"
    )
    limit = "max by (namespace, pod) (llm_engine_max_context_tokens)"
    used = " + ".join(
        f"histogram_quantile(0.99, sum by ({MODEL}, le) (rate(llm_request_{kind}_tokens_bucket[1h])))"
        for kind in ("prompt", "generation")
    )
    rejected = f"sum by ({MODEL}) (rate(llm_requests_rejected_total[5m]))"
    finished = f"sum by ({MODEL}) (rate(llm_requests_finished_total[5m]))"
    out += [
        Recording("llm:kv_cache_headroom_tokens", GROUP, headroom),
        # requests of the full context length the KV cache holds at once
        Recording(
            "llm:kv_cache_concurrency_at_context_limit",
            GROUP,
            f"{capacity} / on (namespace, pod) group_left () {limit}",
        ),
        # p99 prompt + p99 generation: at least the p99 of their sum, so the ratio below errs small
        Recording(CONTEXT_USED_P99, GROUP, used),
        Recording(
            "llm:context_reserved_over_used",
            GROUP,
            f"max by ({MODEL}) (llm_engine_max_context_tokens) / on ({MODEL}) ({CONTEXT_USED_P99} > 0)",
        ),
        Recording(
            "llm:spec_decode_acceptance_ratio:rate5m",
            GROUP,
            f"sum by ({MODEL}) (rate(llm_spec_decode_accepted_tokens_total[5m]))"
            f" / (sum by ({MODEL}) (rate(llm_spec_decode_draft_tokens_total[5m])) > 0)",
        ),
        # model bandwidth and FLOPs utilisation: the engine's own estimates per GPU over its GPU's peaks
        Recording("llm:model_bandwidth_utilization", GROUP, bandwidth_utilization()),
        Recording("llm:model_flops_utilization", GROUP, flops_utilization(t)),
        # refused over offered (refused + finished); no traffic: no sample
        Recording(
            "llm:requests_rejected_ratio:rate5m",
            GROUP,
            f"{rejected} / (({rejected} + on ({MODEL}) {finished}) > 0)",
        ),
    ]
    return out
