"""PromQL pieces the alert groups share: numbers written as Prometheus reads them, a p99 over a histogram."""

from __future__ import annotations

MODEL = "namespace, model"  # the labels that name one model, across replicas


def number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def p99(histogram: str, window: str) -> str:
    return f"histogram_quantile(0.99, sum by (namespace, model, le) (rate({histogram}_bucket[{window}])))"
