"""Alert group llm-inference.engine: the engines' latency objectives, queues, KV cache and scrape health."""

from __future__ import annotations

from alerts.expr import number, p99
from alerts.model import Alert
from alerts.recordings.slo import slo_error_ratio
from alerts.thresholds import Thresholds

GROUP = "llm-inference.engine"


def _budget_burn(t: Thresholds, severity: str) -> str:
    """Any of the burn-rate pairs of `severity` holds, for a model with enough traffic to judge."""
    budget = 1 - t.ttft_slo_objective
    pairs = [
        f"({slo_error_ratio(b.long_window)} > {number(round(b.factor * budget, 6))}"
        f" and {slo_error_ratio(b.short_window)} > {number(round(b.factor * budget, 6))})"
        for b in t.ttft_burn_rates
        if b.severity == severity
    ]
    condition = pairs[0] if len(pairs) == 1 else "(" + " or ".join(pairs) + ")"
    return f"{condition} and on (namespace, model) llm:ttft_requests:rate1h > {number(t.ttft_slo_min_rate)}"


def _slo_text(t: Thresholds) -> str:
    text = f"{number(round(t.ttft_slo_objective * 100, 4))} % of first tokens within {number(t.ttft_slo_seconds)}s"
    if not t.ttft_slo_fallback_seconds:
        return text
    # an engine whose histogram has no bucket at the objective is measured at the nearest bound below it
    fallbacks = " or ".join(f"{number(s)}s" for s in t.ttft_slo_fallback_seconds)
    return f"{text} (measured at {fallbacks} for an engine whose histogram has no {number(t.ttft_slo_seconds)}s bound)"


def alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            name="LLMTimeToFirstTokenBudgetBurn",
            group=GROUP,
            query=_budget_burn(t, "critical"),
            for_=t.ttft_burn_for,
            severity="critical",
            summary=(
                "{{ $labels.namespace }}/{{ $labels.model }} burns its time-to-first-token error budget fast: "
                "{{ $value | humanizePercentage }} of first tokens are late."
            ),
            description=(
                f"Objective: {_slo_text(t)}. At this rate the 30-day error budget is gone in days, not weeks. "
                "Usually queueing: check requests waiting, queue time and the bottleneck row."
            ),
        ),
        Alert(
            name="LLMTimeToFirstTokenBudgetBurnSlow",
            group=GROUP,
            query=_budget_burn(t, "warning"),
            for_=t.ttft_burn_for,
            severity="warning",
            summary=(
                "{{ $labels.namespace }}/{{ $labels.model }} keeps missing its time-to-first-token objective: "
                "{{ $value | humanizePercentage }} of first tokens are late."
            ),
            description=(
                f"Objective: {_slo_text(t)}. A slow, steady burn of the error budget: plan capacity (replicas, "
                "min replicas from the cold start) before it pages."
            ),
        ),
        Alert(
            name="LLMTimeToFirstTokenP99High",
            group=GROUP,
            query=p99("llm_time_to_first_token_seconds", t.latency_window),
            op=">",
            threshold=t.ttft_p99_seconds,
            for_=t.ttft_for,
            # the error-budget alerts page; a high p99 alone is a work-queue signal
            severity="warning",
            summary=(
                "Users of {{ $labels.namespace }}/{{ $labels.model }} wait {{ $value | humanizeDuration }} for the "
                "first token (p99)."
            ),
            description=(
                f"Time to first token p99 is above {number(t.ttft_p99_seconds)}s. Usually queueing: check requests "
                "waiting and queue time; add replicas or route away from hot pods."
            ),
        ),
        Alert(
            name="LLMInterTokenLatencyP99High",
            group=GROUP,
            query=p99("llm_inter_token_latency_seconds", t.latency_window),
            op=">",
            threshold=t.itl_p99_seconds,
            for_=t.itl_for,
            severity="warning",
            summary=(
                "Streaming for {{ $labels.namespace }}/{{ $labels.model }} stalls {{ $value | humanizeDuration }} "
                "between tokens (p99)."
            ),
            description=(
                f"Inter-token latency p99 is above {number(t.itl_p99_seconds)}s: decode is starved (too many "
                "concurrent sequences for the memory bandwidth, or preemptions)."
            ),
        ),
        Alert(
            name="LLMRequestQueueBacklog",
            group=GROUP,
            query="sum by (namespace, model) (llm_requests_waiting)",
            op=">",
            threshold=t.queue_waiting,
            for_=t.queue_for,
            severity="warning",
            summary="{{ $value }} requests are queued for {{ $labels.namespace }}/{{ $labels.model }}.",
            description=(
                f"More than {number(t.queue_waiting)} requests wait to be scheduled: users are waiting whatever the "
                "GPU utilisation says. Scale out, or check the KV cache."
            ),
        ),
        Alert(
            name="LLMLoadImbalance",
            group=GROUP,
            query=(
                f"llm:replica_queue_share > {number(t.imbalance_share)}"
                " and on (namespace, model) (min by (namespace, model) (llm:replica_requests_waiting) == 0)"
                " and on (namespace, model) (sum by (namespace, model) (llm:replica_requests_waiting)"
                f" >= {number(t.imbalance_min_waiting)})"
            ),
            for_=t.imbalance_for,
            severity="warning",
            summary=(
                "{{ $labels.namespace }}/{{ $labels.pod }} holds {{ $value | humanizePercentage }} of the queue of "
                "{{ $labels.model }} while another replica has none."
            ),
            description=(
                "Routing, not capacity: requests pile up on one replica (round-robin over unequal prompts, or "
                "HTTP/2 and keep-alive connections pinned to one pod). Use a load-aware router or balance per request."
            ),
        ),
        Alert(
            name="LLMKVCacheNearlyFull",
            group=GROUP,
            query="max by (namespace, pod, model) (llm_kv_cache_usage_ratio)",
            op=">",
            threshold=t.kv_cache_ratio,
            for_=t.kv_cache_for,
            severity="warning",
            summary="KV cache of {{ $labels.namespace }}/{{ $labels.pod }} is {{ $value | humanizePercentage }} full.",
            description=(
                f"KV cache usage is above {t.kv_cache_ratio:.0%}: new requests queue and running ones get preempted. "
                "Add replicas or reduce max-model-len."
            ),
        ),
        Alert(
            name="LLMEngineDown",
            group=GROUP,
            query="llm_engine_up",
            op="==",
            threshold=0,
            for_=t.engine_down_for,
            severity="critical",
            summary="Engine {{ $labels.namespace }}/{{ $labels.pod }} does not answer the exporter.",
            description=(
                "The exporter cannot scrape this engine's metrics (see llm_engine_scrape_error for why). If the pod "
                "is running, the engine may be hung; its panels are blank meanwhile."
            ),
        ),
        Alert(
            name="LLMMetricMissing",
            group=GROUP,
            query="llm_metric_present",
            op="==",
            threshold=0,
            for_=t.metric_missing_for,
            severity="warning",
            summary=(
                "{{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.engine }} {{ $labels.version }}) does not "
                "expose {{ $labels.source }}."
            ),
            description=(
                "The series behind canonical {{ $labels.metric }} is missing for this engine version: a rename or a "
                "disabled feature. Dashboards and autoscalers on it read nothing."
            ),
        ),
        Alert(
            name="LLMEngineSeriesDropped",
            group=GROUP,
            query="llm_engine_series_dropped",
            op=">",
            threshold=0,
            for_=t.series_dropped_for,
            severity="warning",
            summary=(
                "{{ $labels.namespace }}/{{ $labels.pod }} loses {{ $value }} series per scrape ({{ $labels.reason }})."
            ),
            description=(
                "The exporter drops this engine's series past a cap (series_limit, label_too_long) or repeated "
                "(duplicate): panels and alerts on the dropped models or adapters read nothing."
            ),
        ),
        Alert(
            name="LLMEngineUnmappedMetrics",
            group=GROUP,
            query="llm_engine_unmapped_metrics",
            op=">",
            threshold=0,
            for_=t.unmapped_for,
            severity="info",
            summary=(
                "{{ $labels.namespace }}/{{ $labels.pod }} exposes {{ $value }} engine metric families the mapping "
                "does not know."
            ),
            description=(
                "The early warning of a rename: a new engine release added or renamed series. Compare with "
                "`llm-exporter mappings` and upgrade the exporter before an old name disappears."
            ),
        ),
    ]
