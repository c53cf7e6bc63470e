"""Deployment checks (cluster role): each engine workload against what makes LLM serving fail (`exporter.audit`)."""

from __future__ import annotations

from exporter.catalogue.spec import MetricSpec, Stability, gauge

CHECK_FAILING = gauge(
    "llm_workload_check_failing",
    "1 when the engine workload fails the deployment check, 0 when it passes; absent where the check does not "
    "apply or the objects in view cannot tell (`llm-exporter audit` lists every check with its reason and fix). "
    "severity: warning, or info for advisory checks.",
    ("namespace", "workload", "kind", "check", "severity"),
    subsystem="cluster",
    role="cluster",
    stability=Stability.EXPERIMENTAL,
)

METRICS: tuple[MetricSpec, ...] = (CHECK_FAILING,)
