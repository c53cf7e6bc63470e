"""The metric names of an `autoscaling/v2` HorizontalPodAutoscaler, as queries (pure).

`Pods`, `Object` and `External` metrics name a metric of the custom or external metrics API. Google Managed
Prometheus' adapter names a Prometheus series `prometheus.googleapis.com|NAME|TYPE`: NAME is the series it
reads (with the selector's `matchLabels` as matchers), so it is checked like any query. Any other name is what a
metrics adapter publishes, often renamed from the series it reads (prometheus-adapter turns `vllm:` into
`vllm_`): it is listed as skipped, and the adapter's config is what to check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

GMP = "prometheus.googleapis.com"
ADAPTER = "metrics-adapter"  # the kind of a name no Prometheus holds as such
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


@dataclass(frozen=True)
class Metric:
    where: str
    expr: str  # a selector for a Managed Prometheus name, the adapter's name otherwise
    datasource: str  # "" when `expr` is PromQL, ADAPTER otherwise


def is_hpa(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == "HorizontalPodAutoscaler" and str(doc.get("apiVersion") or "").startswith(
        "autoscaling/v2"
    )


def metrics(doc: Mapping[str, Any]) -> Iterator[Metric]:
    name = str((doc.get("metadata") or {}).get("name") or "?")
    for i, entry in enumerate((doc.get("spec") or {}).get("metrics") or []):
        if not isinstance(entry, dict):
            continue
        kind = str(entry.get("type") or "")
        source = entry.get(kind[:1].lower() + kind[1:]) if kind else None
        metric = source.get("metric") if isinstance(source, dict) else None
        if not isinstance(metric, dict) or not isinstance(metric.get("name"), str):
            continue  # Resource and ContainerResource: cpu and memory, no query
        where = f"HorizontalPodAutoscaler {name} metric {i} ({kind} {metric['name']})"
        series = _managed(metric["name"])
        if series is None:
            yield Metric(where, metric["name"], ADAPTER)
        else:
            yield Metric(where, series + _matchers(metric.get("selector")), "")


def _managed(name: str) -> str | None:
    """The Prometheus name of a Managed Prometheus metric name, None for any other name."""
    parts = name.split("|")
    if len(parts) == 3 and parts[0] == GMP and _NAME.fullmatch(parts[1]):
        return parts[1]
    return None


def _matchers(selector: Any) -> str:
    labels = selector.get("matchLabels") if isinstance(selector, dict) else None
    if not isinstance(labels, dict) or not labels:
        return ""
    # Managed Prometheus prefixes a series label with `metric.labels.`, a monitored resource's with
    # `resource.labels.` (namespace, cluster): both are labels of the series
    pairs = [
        (str(k).removeprefix("metric.labels.").removeprefix("resource.labels."), str(v)) for k, v in labels.items()
    ]
    return "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in pairs if _LABEL.fullmatch(k)) + "}"
