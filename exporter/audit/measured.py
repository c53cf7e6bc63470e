"""The measured thresholds per workload, from Prometheus (the cluster role's and the engines' series).

Start-ups are rare events, so their quantiles are taken over the histograms' cumulative buckets (since the
exporter started) rather than a rate; request durations over the last `window`. Engine series carry the pod,
joined to the workload through `llm_replica_pod_info`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from exporter.audit.base import Measured
from exporter.k8s.workloads import Workload
from exporter.sources.prometheus import Prometheus

Key = tuple[str, str]  # (namespace, workload)

COLD_START = (
    "sum by (namespace, workload) (histogram_quantile(0.9, sum by (namespace, workload, phase, le) "
    "(llm_replica_startup_seconds_bucket)))"
)
STARTING = (
    'histogram_quantile(0.9, sum by (namespace, workload, le) (llm_replica_startup_seconds_bucket{phase="starting"}))'
)
_BY_WORKLOAD = "* on (namespace, pod) group_left (workload) llm_replica_pod_info"


def request_p99(window: str) -> str:
    return (
        "histogram_quantile(0.99, sum by (namespace, workload, le) "
        f"(rate(llm_request_duration_seconds_bucket[{window}]) {_BY_WORKLOAD}))"
    )


def tokens_per_request(window: str) -> str:
    """The context the product really uses per request: the p99 prompt length plus the p99 generation length
    where the engines export the length histograms (`llm_request_prompt_tokens`, `..._generation_tokens`; at
    least the p99 of their sum), else the mean prompt + generated tokens per finished request."""
    p99 = " + ".join(
        "histogram_quantile(0.99, sum by (namespace, workload, le) "
        f"(rate(llm_request_{kind}_tokens_bucket[{window}]) {_BY_WORKLOAD}))"
        for kind in ("prompt", "generation")
    )
    tokens = (
        f"sum by (namespace, workload) ((rate(llm_prompt_tokens_total[{window}]) + "
        f"rate(llm_generation_tokens_total[{window}])) {_BY_WORKLOAD})"
    )
    finished = f"sum by (namespace, workload) (rate(llm_requests_finished_total[{window}]) {_BY_WORKLOAD})"
    return f"({p99}) or ({tokens} / {finished})"


def bucket_quantile(q: float, bounds: tuple[float, ...], cumulative: list[int], count: int) -> float | None:
    """The q-quantile of a histogram's cumulative buckets, interpolated as Prometheus' histogram_quantile."""
    if count <= 0:
        return None
    rank = q * count
    lower, below = 0.0, 0
    for bound, seen in zip(bounds, cumulative, strict=True):
        if seen >= rank:
            inside = seen - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = bound, seen
    return bounds[-1]  # in the +Inf bucket: the highest finite bound, as Prometheus answers


def _values(prometheus: Prometheus, expr: str) -> dict[Key, float]:
    out: dict[Key, float] = {}
    for sample in prometheus.query(expr):
        labels = sample.get("metric") or {}
        try:
            value = float(sample["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if math.isfinite(value) and value > 0:
            out[(str(labels.get("namespace", "")), str(labels.get("workload", "")))] = value
    return out


def from_prometheus(prometheus: Prometheus, window: str = "7d") -> Callable[[Workload], Measured]:
    """A lookup of each workload's measurements; raises PrometheusError when Prometheus cannot answer."""
    cold, starting = _values(prometheus, COLD_START), _values(prometheus, STARTING)
    requests, tokens = _values(prometheus, request_p99(window)), _values(prometheus, tokens_per_request(window))

    def lookup(w: Workload) -> Measured:
        # the replica series name the operator resource behind a generated workload (docs/cluster.md)
        key = (w.namespace, w.owner or w.name)
        return Measured(cold.get(key), starting.get(key), requests.get(key), tokens.get(key))

    return lookup
