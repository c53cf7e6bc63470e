"""The walk's only I/O: every query of the verdicts, evaluated at one instant through the Prometheus source."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Protocol

from exporter.check.scope import Cluster
from exporter.diagnose.limits import DEFAULT, Limits
from exporter.diagnose.model import Readings, Sample
from exporter.diagnose.promql import Scope, render
from exporter.diagnose.registry import VERDICTS
from exporter.diagnose.walk import SCOPE_QUERIES

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class Source(Protocol):
    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]: ...


def rfc3339(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def queries(scope: Scope, limits: Limits = DEFAULT) -> list[tuple[str, str, str]]:
    """(stage, query id, PromQL) of the whole walk, in walk order."""
    out = [("telemetry", qid, render(t, scope, limits.selector)) for qid, t in SCOPE_QUERIES.items()]
    for verdict in VERDICTS:
        for name, template in verdict.queries(limits).items():
            out.append((verdict.stage, verdict.qid(name), render(template, scope, limits.selector)))
    return out


def samples(result: list[dict[str, Any]]) -> tuple[Sample, ...]:
    out = []
    for item in result:
        try:
            value = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        labels = {str(k): str(v) for k, v in item.get("metric", {}).items() if k != "__name__"}
        out.append(Sample(labels, value))
    return tuple(out)


def read(
    source: Source, scope: Scope, at: float, limits: Limits = DEFAULT, progress: Progress | None = None
) -> Readings:
    planned = queries(scope, limits)
    texts, results = {}, {}
    for i, (stage, qid, expr) in enumerate(planned):
        if progress is not None:
            progress(stage, i, len(planned))
        texts[qid] = expr
        results[qid] = samples(source.query(expr, at=at))
    if progress is not None:
        progress("done", len(planned), len(planned))
    return Readings(rfc3339(at), scope.window, texts, results, limits, scope.model, scope.cluster)


def clusters(source: Source, scope: Scope, at: float, label: str, limits: Limits = DEFAULT) -> list[Cluster | None]:
    """The clusters to walk one by one: each value of `label` among the engine series in scope when the store
    holds more than one (Thanos Query over many clusters: summed, their queues and free GPUs would describe no
    cluster at all), else `[None]`, the one Prometheus walked as it is. Series without the label are a cluster
    of their own (`label=""`)."""
    series = "llm_requests_running{$NSM}" if scope.model else "llm_engine_info{$NS}"
    expr = render(f"group by ({label}) (last_over_time({series}[$W]))", scope, limits.selector)
    values = sorted({s.label(label) for s in samples(source.query(expr, at=at))})
    return [Cluster(label, v) for v in values] if len(values) > 1 else [None]
