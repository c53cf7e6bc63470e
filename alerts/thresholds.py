"""Every alert threshold, duration and selector in one object.

Override by building another `Thresholds` (e.g. `dataclasses.replace(DEFAULT, ttft_p99_seconds=1.0)`) and
rendering the rules from it; the test suite renders a short-`for` copy the same way for its end-to-end run.
"""

from __future__ import annotations

from dataclasses import dataclass

EXPORTER_JOB = "llm-exporter"
"""The Prometheus `job` label of every exporter target (both roles); `LLMExporterDown` selects on it."""

RUNBOOK_URL = "docs/runbook.md"
"""Where the runbook lives, relative to the repository: the committed rule files keep this link. For clickable
links, point them at your hosted copy without editing it here: the chart's `prometheusRule.runbookUrl`, or
`llm-exporter render --runbook-url URL --out DIR` (renders `replace(DEFAULT, runbook_url=URL)`)."""


@dataclass(frozen=True)
class BurnRate:
    """One multiwindow burn-rate condition (the SRE workbook's alerting on SLOs): the error budget burns
    `factor` times faster than sustainable over both windows; the short one makes the alert reset soon."""

    long_window: str
    short_window: str
    factor: float
    severity: str


# A 30-day budget: 2 % of it in 1 h, 5 % in 6 h page; 10 % in 1 d, 10 % in 3 d go to the work queue.
BURN_RATES = (
    BurnRate("1h", "5m", 14.4, "critical"),
    BurnRate("6h", "30m", 6, "critical"),
    BurnRate("1d", "2h", 3, "warning"),
    BurnRate("3d", "6h", 1, "warning"),
)


@dataclass(frozen=True)
class Thresholds:
    # Users
    ttft_p99_seconds: float = 2.0
    ttft_for: str = "5m"
    itl_p99_seconds: float = 0.2
    itl_for: str = "10m"
    latency_window: str = "5m"  # rate() window of the quantile alerts
    # TTFT objective: `ttft_slo_objective` of first tokens within `ttft_slo_seconds`, which must be a bucket
    # bound of the TTFT histogram (vLLM's and LMDeploy's: ... 1, 2.5, 5, 7.5 ...). Paging burns its error budget.
    ttft_slo_seconds: float = 2.5
    # Bounds read, in this order, for a model whose histogram has no bucket at `ttft_slo_seconds`: the nearest
    # bound below it of each engine without one (SGLang's default buckets: ... 1, 2, 4 ...), so its objective is
    # measured stricter instead of not at all (tests/bundle/test_slo.py derives them from data/histogram_buckets.json)
    ttft_slo_fallback_seconds: tuple[float, ...] = (2.0,)
    ttft_slo_objective: float = 0.99
    ttft_burn_rates: tuple[BurnRate, ...] = BURN_RATES
    ttft_slo_min_rate: float = 0.05  # requests/s over 1 h (3 a minute) below which the SLO alerts stay silent
    ttft_burn_for: str = "2m"
    # The objectives the SLO generators add (exporter/bundle/slo.py: Sloth and Pyrra objects over the same 30-day
    # budget and burn-rate windows; the bundle's own burn-rate alerts cover time to first token only):
    # `itl_slo_objective` of token gaps within `itl_slo_seconds` (a bucket bound of the ITL histogram), and
    # `error_slo_objective` of finished requests not ending with one of `error_slo_reasons`
    itl_slo_seconds: float = 0.2
    itl_slo_objective: float = 0.99
    error_slo_objective: float = 0.999
    error_slo_reasons: tuple[str, ...] = ("abort", "error")
    slo_period: str = "30d"  # the error budget's window, which the burn-rate factors assume
    # Queue and engine
    queue_waiting: float = 5
    queue_for: str = "2m"
    kv_cache_ratio: float = 0.95
    kv_cache_for: str = "10m"
    engine_down_for: str = "5m"
    metric_missing_for: str = "10m"
    series_dropped_for: str = "15m"
    unmapped_for: str = "1h"
    # Routing: one replica holds most of a model's queue while a sibling has none
    imbalance_share: float = 0.8
    imbalance_min_waiting: float = 4
    imbalance_for: str = "10m"
    # Bottleneck classes (recording rules): KV usage and GPU memory bandwidth counted as "near the limit"
    bottleneck_kv_ratio: float = 0.9
    bottleneck_bandwidth_ratio: float = 0.8
    # ... and the engine's FLOPs per GPU against the datasheet peak (MFU): inference seldom passes 0.5-0.6
    bottleneck_compute_ratio: float = 0.5
    # the precision of llm_gpu_peak_flops that MFU divides by: fp16 (= bf16 on every GPU of the table that has
    # both, and the only one a T4 has); an FP8 model's MFU so reads twice what it would against the FP8 peak
    mfu_precision: str = "fp16"
    # Cost: an engine pod that served no token over this window holds its GPUs idle (llm:model_gpus_idle)
    cost_idle_window: str = "1h"
    # Capacity alerts: preemptions for this long with the KV cache this full; admission control refusing
    # this share of the requests offered; a context limit this many times the p99 used (as the audit check
    # context-oversized); speculative decoding accepting less than this share of its drafts
    preemption_kv_ratio: float = 0.95
    preemption_for: str = "10m"
    rejected_ratio: float = 0.01
    rejected_for: str = "5m"
    context_oversized_factor: float = 4.0
    context_oversized_for: str = "1h"
    spec_acceptance_floor: float = 0.3
    spec_acceptance_for: str = "15m"
    # Gateway budgets: the remaining budget, extrapolated from its trend over this window, reaches 0 within
    # the horizon (the spend rate of the last hours, held)
    budget_trend_window: str = "6h"
    budget_horizon_seconds: float = 86400
    budget_exhaustion_for: str = "30m"
    # GPU: vLLM preallocates 90% of memory by default, so only the last few percent are alarming
    gpu_memory_ratio: float = 0.98
    gpu_memory_for: str = "10m"
    gpu_lost_for: str = "1m"
    # Placement
    fragmented_for: str = "5m"
    # Routes: the request-duration p99 against the shortest route timeout in front of the engines
    route_timeout_fraction: float = 0.8
    route_timeout_for: str = "15m"
    route_buffering_for: str = "15m"
    cluster_view_stale_seconds: float = 600
    # Replicas: a pod still not Ready this long after it was created is stuck, not slow
    replica_startup_slow_seconds: float = 900
    replica_startup_slow_for: str = "5m"
    # Autoscaler at its maximum replicas while requests wait (queue_waiting, per workload)
    autoscaler_maxed_for: str = "15m"
    cluster_view_stale_for: str = "5m"
    # Query watchdog: KEDA scales on 0 when its query is empty, so that pages; a blank panel does not
    autoscaler_query_empty_for: str = "10m"
    dashboard_query_empty_for: str = "1h"
    query_watchdog_failing_for: str = "15m"
    # Deployment checks (llm_workload_check_failing): settings, not incidents; a rollout may pass through
    workload_check_failing_for: str = "30m"
    # The exporter itself
    collector_failing_for: str = "10m"
    exporter_down_for: str = "5m"
    exporter_job: str = EXPORTER_JOB
    # added to every llm_* selector of the alerts and recording rules (kubernetes-mixin style), so that
    # another job exposing the same names cannot trigger them; "" when the llm_* series come from
    # elsewhere, e.g. alerts/vllm-compat.rules.yaml over a direct vLLM scrape
    selector: str = f'job="{EXPORTER_JOB}"'
    runbook_url: str = RUNBOOK_URL
    evaluation_interval: str = "30s"  # of every rule group
    # GPU health and waste: XIDs counted in this window; the XIDs that page (NVIDIA's table: reset the GPU,
    # drain the node, or RMA), the others warn; memory of no pod; GPUs Kubernetes no longer offers
    gpu_xid_window: str = "10m"
    gpu_xid_critical: tuple[int, ...] = (48, 61, 62, 64, 74, 79, 95, 119, 120)
    gpu_row_remap_failed_for: str = "1m"
    gpu_unhealthy_for: str = "10m"
    gpu_unattributed_memory_bytes: float = 1 << 30
    gpu_unattributed_memory_for: str = "15m"
    gpu_allocated_idle_for: str = "5m"  # on top of the exporter's gpu.allocated_idle_seconds


DEFAULT = Thresholds()
