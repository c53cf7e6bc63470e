"""Recording rules `llm-inference.diagnosis`: the verdicts of `llm-exporter diagnose` as series, so that the
dashboard's Diagnosis row and the command give one answer."""

from __future__ import annotations

from alerts.model import Recording
from alerts.thresholds import Thresholds
from exporter.diagnose.limits import Limits
from exporter.diagnose.promql import Scope, render
from exporter.diagnose.registry import VERDICTS

GROUP = "llm-inference.diagnosis"
DIAGNOSIS = "llm:diagnosis"


def recordings(t: Thresholds) -> list[Recording]:
    """`llm:diagnosis{stage, verdict, ...}`: one series for each verdict of `llm-exporter diagnose` that holds
    now, from the very condition diagnose reads (over `latency_window` instead of its --window), so that the
    dashboard's Diagnosis row and the command give one answer. The rule's labels name the stage and verdict;
    its value is the condition's (a share, GPUs, seconds); its other labels say where (namespace, model, pod,
    workload, route)."""
    limits = Limits.from_thresholds(t)
    out = []
    for verdict in VERDICTS:
        if not verdict.condition:
            continue
        condition = render(verdict.queries(limits)[verdict.condition], Scope(window=t.latency_window))
        labels = (("stage", verdict.stage), ("verdict", verdict.id))
        out.append(Recording(DIAGNOSIS, GROUP, condition, labels))
    return out
