"""Capacity alerts (`llm-inference.capacity-alerts`): the KV cache thrashing, admission control shedding,
context reserved for nothing, and speculative decoding that costs more than it saves."""

from __future__ import annotations

from alerts.model import Alert
from alerts.thresholds import Thresholds

GROUP = "llm-inference.capacity-alerts"
POD = "namespace, pod"


def _kv_full(t: Thresholds) -> str:
    """Each engine pod whose KV cache is at least `preemption_kv_ratio` full: the engine's ratio, else its tokens
    in use over its capacity (SGLang counts tokens, not a ratio)."""
    ratio = (
        f"max by ({POD}) (llm_kv_cache_usage_ratio) or on ({POD})"
        f" (max by ({POD}) (llm_kv_cache_used_tokens) / max by ({POD}) (llm_kv_cache_capacity_tokens))"
    )
    return f"({ratio}) >= {t.preemption_kv_ratio}"


def alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            name="LLMPreemptionSustained",
            group=GROUP,
            query=f"(sum by (namespace, pod, model) (rate(llm_preemptions_total[5m])) > 0)"
            f" and on ({POD}) ({_kv_full(t)})",
            op="",
            threshold=None,
            for_=t.preemption_for,
            severity="warning",
            summary='{{ $labels.namespace }}/{{ $labels.pod }} preempts {{ printf "%.2f" $value }} requests/s '
            "with its KV cache full.",
            description=f"The engine has evicted running requests (vLLM preemptions, SGLang retractions) for "
            f"{t.preemption_for} while its KV cache is at least {t.preemption_kv_ratio:.0%} full: the GPU recomputes "
            "work it already did, and users see timeouts next. Lower max-num-seqs (fewer sequences at once), "
            "shorten the context limit, give the KV cache more memory, or add replicas.",
        ),
        Alert(
            name="LLMRequestsRejected",
            group=GROUP,
            query="llm:requests_rejected_ratio:rate5m",
            op=">",
            threshold=t.rejected_ratio,
            for_=t.rejected_for,
            severity="warning",
            summary="{{ $labels.namespace }}/{{ $labels.model }} refuses {{ $value | humanizePercentage }} of its "
            "requests at admission.",
            description=f"The engine's admission control sheds load (vLLM's queue limits max_num_queued_reqs/"
            f"max_num_queued_tokens): more than {t.rejected_ratio:.0%} of the requests offered are refused before "
            "they queue. Clients get errors, not latency. Add replicas, or raise the queue limit if the latency "
            "objective allows the longer queue.",
        ),
        Alert(
            name="LLMContextOversized",
            group=GROUP,
            query="llm:context_reserved_over_used",
            op=">",
            threshold=t.context_oversized_factor,
            for_=t.context_oversized_for,
            severity="info",
            summary="{{ $labels.namespace }}/{{ $labels.model }} accepts contexts {{ $value | humanize }} times "
            "longer than its requests use (p99).",
            description=f"The context limit is over {t.context_oversized_factor:g} times the p99 prompt plus the p99 "
            "generation length of the last hour: the engine sizes its batch and KV cache for contexts nobody "
            "sends. Lower --max-model-len (vLLM; SGLang --context-length) towards what is used, with a margin: more "
            "requests then fit at once.",
        ),
        Alert(
            name="LLMSpeculativeDecodingAcceptanceLow",
            group=GROUP,
            query="llm:spec_decode_acceptance_ratio:rate5m",
            op="<",
            threshold=t.spec_acceptance_floor,
            for_=t.spec_acceptance_for,
            severity="warning",
            summary="Speculative decoding of {{ $labels.namespace }}/{{ $labels.model }} accepts only "
            "{{ $value | humanizePercentage }} of its draft tokens.",
            description=f"Below {t.spec_acceptance_floor:.0%} accepted, the draft's work is mostly thrown away and "
            "speculation slows decoding instead of speeding it. Use a draft model closer to the target (or one "
            "trained for it), propose fewer tokens per step (num_speculative_tokens), or turn speculation off for "
            "this traffic.",
        ),
    ]
