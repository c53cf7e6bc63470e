"""Reading the exporter's own output for the demo's live view (pure functions)."""

from __future__ import annotations

import math

from exporter.engines import parser

BUCKET = "llm_time_to_first_token_seconds_bucket"
WANTED = frozenset({BUCKET, "llm_requests_waiting", "llm_requests_running", "llm_metric_present", "llm_engine_up"})


def histogram_quantile(q: float, buckets: dict[float, float]) -> float:
    """PromQL's histogram_quantile over cumulative bucket counts {le: count}; NaN when empty."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return math.nan
    rank = q * buckets[bounds[-1]]
    previous_bound, previous_count = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return previous_bound
            if count == previous_count:
                return bound
            return previous_bound + (bound - previous_bound) * (rank - previous_count) / (count - previous_count)
        previous_bound, previous_count = bound, count
    return previous_bound


def snapshot(body: str) -> dict[str, float]:
    """TTFT p99, waiting, running, and the number of missing expected series in one exposition."""
    parsed = parser.parse(body, WANTED, "llm_")
    buckets: dict[float, float] = {}
    for labels, value in parsed.samples.get(BUCKET, ()):
        le = float(dict(labels)["le"])
        buckets[le] = buckets.get(le, 0.0) + value

    def total(name: str) -> float:
        return sum(v for _, v in parsed.samples.get(name, ()))

    missing = sum(1 for _, v in parsed.samples.get("llm_metric_present", ()) if v == 0)
    return {
        "ttft_p99": histogram_quantile(0.99, buckets),
        "waiting": total("llm_requests_waiting"),
        "running": total("llm_requests_running"),
        "missing": float(missing),
        "up": total("llm_engine_up"),
    }


def rename_signals(body: str) -> tuple[list[tuple[str, str]], float]:
    """(canonical metric, expected source) of each `llm_metric_present` at 0, and the unmapped family count."""
    parsed = parser.parse(body, frozenset({"llm_metric_present", "llm_engine_unmapped_metrics"}), "llm_")
    missing = [
        (labels["metric"], labels["source"])
        for labels in (dict(pairs) for pairs, v in parsed.samples.get("llm_metric_present", ()) if v == 0)
    ]
    return missing, sum(v for _, v in parsed.samples.get("llm_engine_unmapped_metrics", ()))


_VERSION_SOURCES = {"endpoint": "asked from the engine", "inferred": "inferred from its metric names"}


def engines_found(body: str) -> list[str]:
    """One line per engine target, from `llm_engine_info`: `vllm 0.32.0 (asked from the engine)`."""
    parsed = parser.parse(body, frozenset({"llm_engine_info"}), "llm_")
    found = []
    for pairs, _ in parsed.samples.get("llm_engine_info", ()):
        labels = dict(pairs)
        how = _VERSION_SOURCES.get(labels["version_source"], "version unknown")
        found.append(f"{labels['engine']} {labels['version']} ({how})")
    return sorted(found)
