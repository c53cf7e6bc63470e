"""The check registry: one module per check, in the order reports list them. Ids are stable (a contract)."""

from __future__ import annotations

from exporter.audit.base import Check
from exporter.audit.checks import (
    autoscaler_cooldown_short,
    autoscaler_scale_to_zero,
    autoscaler_utilization_signal,
    context_oversized,
    fixed_replicas,
    gpu_nodes_untainted,
    grace_period_short,
    ingress_buffering,
    ingress_timeout_short,
    keda_null_as_zero,
    no_gpu_toleration,
    no_pdb,
    no_prestop,
    no_readiness_probe,
    no_startup_probe,
    non_gpu_pods_on_gpu_nodes,
    round_robin_routing,
    time_slicing_user_facing,
)

CHECKS: tuple[Check, ...] = tuple(
    m.CHECK
    for m in (
        autoscaler_utilization_signal,
        autoscaler_scale_to_zero,
        autoscaler_cooldown_short,
        keda_null_as_zero,
        fixed_replicas,
        no_readiness_probe,
        no_startup_probe,
        grace_period_short,
        no_prestop,
        no_pdb,
        gpu_nodes_untainted,
        no_gpu_toleration,
        non_gpu_pods_on_gpu_nodes,
        time_slicing_user_facing,
        round_robin_routing,
        ingress_timeout_short,
        ingress_buffering,
        context_oversized,
    )
)
BY_ID: dict[str, Check] = {c.id: c for c in CHECKS}
if len(BY_ID) != len(CHECKS):  # pragma: no cover - a programming error caught at import
    raise RuntimeError("duplicate check id")
