"""Every alert threshold, duration and selector in one object.

Override by building another `Thresholds` (e.g. `dataclasses.replace(DEFAULT, ttft_p99_seconds=1.0)`) and
rendering the rules from it; the test suite renders a short-`for` copy the same way for its end-to-end run.
"""

from __future__ import annotations

from dataclasses import dataclass

EXPORTER_JOB = "llm-exporter"
"""The Prometheus `job` label of every exporter target (both roles); `LLMExporterDown` selects on it."""

RUNBOOK_URL = "docs/runbook.md"
"""Where the runbook lives, relative to the repository; point it at your hosted copy to get clickable links."""


@dataclass(frozen=True)
class Thresholds:
    # Users
    ttft_p99_seconds: float = 2.0
    ttft_for: str = "5m"
    itl_p99_seconds: float = 0.2
    itl_for: str = "10m"
    latency_window: str = "5m"  # rate() window of the quantile alerts
    # Queue and engine
    queue_waiting: float = 5
    queue_for: str = "2m"
    kv_cache_ratio: float = 0.95
    kv_cache_for: str = "10m"
    engine_down_for: str = "5m"
    metric_missing_for: str = "10m"
    series_dropped_for: str = "15m"
    # GPU: vLLM preallocates 90% of memory by default, so only the last few percent are alarming
    gpu_memory_ratio: float = 0.98
    gpu_memory_for: str = "10m"
    gpu_lost_for: str = "1m"
    # Placement
    fragmented_for: str = "5m"
    # The exporter itself
    collector_failing_for: str = "10m"
    exporter_down_for: str = "5m"
    exporter_job: str = EXPORTER_JOB
    runbook_url: str = RUNBOOK_URL
    evaluation_interval: str = "30s"  # of every rule group


DEFAULT = Thresholds()
