"""Recording rules of the bundle, assembled in rule-file order: one module per group in `alerts/recordings/`.

They live in the same rule file as the alerts (each in a group of its own) because alerts and panels read
them. Names follow Prometheus' `level:metric:operations` convention for recorded series.

- `llm-inference.slo`: the share of first tokens slower than the objective over each window the
  burn-rate alerts use, and the request rate that guards them against low traffic.
- `llm-inference.replicas`: how one model's queue is spread over its replicas (routing, stage 1); the
  queue per workload (the engine series joined to `llm_replica_pod_info`), and whether its autoscaler is
  held at its maximum, or at its minimum while that queue grows (cold start, stage 2).
- `llm-inference.bottleneck`: which resource binds each model now (stage 3): `kv_capacity` (KV cache full
  with requests waiting, or preemptions), `memory_bandwidth` (the model's GPUs near their memory bandwidth
  peak while decoding), `compute` (requests wait although KV cache and bandwidth have room: prefill is
  saturated) or `none`. The first that holds wins, in that order; the runbook has the definitions.
- `llm-inference.capacity`: capacity in tokens, from the engines' own counts: tokens per second per GPU
  (prompt and completion apart), KV headroom in tokens and how many requests at the context limit fit,
  the context reserved against the p99 used, speculative decoding's acceptance, the load shed ratio, and the
  model bandwidth and FLOPs utilisation (the engine's estimated bytes read and FLOPs per GPU over the GPU's
  peak bandwidth and datasheet peak FLOPs, `llm_gpu_peak_flops`).
- `llm-inference.cost`: GPU-seconds per model, tokens per GPU-hour, cost per million tokens
  and the idle cost of allocated GPUs that served no token, from the configured price per GPU-hour
  (`llm_gpu_price_per_second`, the cluster role's `cost.gpu_hour_prices`).
- `llm-inference.tenants`: who used each model and what it cost: each tenant's share of the model's gateway
  tokens (`llm_gateway_tokens_total`, prompt and generation apart) times the model's GPUs and cost, joined on
  the model name (the module's docstring says what must match).
"""

from __future__ import annotations

from collections.abc import Callable

from alerts.model import Recording
from alerts.recordings import bottleneck, capacity, cost, diagnosis, replicas, slo, tenants
from alerts.recordings.slo import slo_error_ratio
from alerts.thresholds import DEFAULT, Thresholds
from exporter.promql.selectors import scoped

__all__ = ["GROUPS", "groups", "recordings", "slo_error_ratio"]

# each group's `recordings`, in rule-file order
GROUPS: tuple[Callable[[Thresholds], list[Recording]], ...] = (
    slo.recordings,
    replicas.recordings,
    bottleneck.recordings,
    capacity.recordings,
    cost.recordings,
    tenants.recordings,
    diagnosis.recordings,
)


def recordings(t: Thresholds = DEFAULT) -> list[Recording]:
    """Every recording rule of the bundle, in rule-file order."""
    return [Recording(r.name, r.group, scoped(r.expr, t.selector), r.labels) for group in GROUPS for r in group(t)]


def groups(t: Thresholds = DEFAULT) -> dict[str, list[Recording]]:
    out: dict[str, list[Recording]] = {}
    for rule in recordings(t):
        out.setdefault(rule.group, []).append(rule)
    return out
