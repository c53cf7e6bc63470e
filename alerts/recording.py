"""Recording rules of the bundle: the TTFT error budget, the per-replica queue view and the bottleneck class.

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
- `llm-inference.cost` (alerts/cost.py): GPU-seconds per model, tokens per GPU-hour, cost per million tokens
  and the idle cost of allocated GPUs that served no token, from the configured price per GPU-hour
  (`llm_gpu_price_per_second`, the cluster role's `cost.gpu_hour_prices`).
"""

from __future__ import annotations

from alerts import cost
from alerts.expr import MODEL
from alerts.model import Recording
from alerts.thresholds import DEFAULT, Thresholds
from exporter.diagnose.limits import Limits
from exporter.diagnose.promql import Scope, render
from exporter.diagnose.registry import VERDICTS
from exporter.promql.selectors import scoped

SLO_GROUP = "llm-inference.slo"
REPLICAS_GROUP = "llm-inference.replicas"
BOTTLENECK_GROUP = "llm-inference.bottleneck"
REPLICA = "namespace, model, pod"
AUTOSCALER = "namespace, workload, autoscaler, kind"
BOTTLENECKS = ("kv_capacity", "memory_bandwidth", "compute", "none")
CAPACITY_GROUP = "llm-inference.capacity"
RANK = "namespace, pod, dp_rank"  # one engine's KV cache: vLLM's capacity has no model label


def bucket_bound(seconds: float) -> str:
    """`le` as Prometheus 3 stores a classic histogram's bound: always a float (`5.0`, `2.5`)."""
    return repr(float(seconds))


def slo_error_ratio(window: str) -> str:
    return f"llm:ttft_slo_error_ratio:rate{window}"


def slo_windows(t: Thresholds) -> list[str]:
    """Every window a burn-rate pair uses, each once, shortest first."""
    seen: dict[str, None] = {}
    for burn in t.ttft_burn_rates:
        seen[burn.short_window] = None
        seen[burn.long_window] = None
    return sorted(seen, key=_seconds)


def _seconds(window: str) -> int:
    unit = {"m": 60, "h": 3600, "d": 86400}[window[-1]]
    return int(window[:-1]) * unit


def _slo(t: Thresholds) -> list[Recording]:
    good = f'llm_time_to_first_token_seconds_bucket{{le="{bucket_bound(t.ttft_slo_seconds)}"}}'
    out = []
    for window in slo_windows(t):
        rate_all = f"sum by ({MODEL}) (rate(llm_time_to_first_token_seconds_count[{window}]))"
        rate_good = f"sum by ({MODEL}) (rate({good}[{window}]))"
        # no traffic in the window: no sample (not NaN), so a silent model neither burns nor recovers budget
        out.append(Recording(slo_error_ratio(window), SLO_GROUP, f"1 - {rate_good} / ({rate_all} > 0)"))
    out.append(
        Recording(
            "llm:ttft_requests:rate1h",
            SLO_GROUP,
            f"sum by ({MODEL}) (rate(llm_time_to_first_token_seconds_count[1h]))",
        )
    )
    return out


WORKLOAD_WAITING = "llm:workload_requests_waiting"


def _replicas() -> list[Recording]:
    waiting = "llm:replica_requests_waiting"
    return [
        # data-parallel ranks of one pod share its queue: one number per replica
        Recording(waiting, REPLICAS_GROUP, f"sum by ({REPLICA}) (llm_requests_waiting)"),
        Recording("llm:replica_requests_running", REPLICAS_GROUP, f"sum by ({REPLICA}) (llm_requests_running)"),
        Recording(
            "llm:replica_queue_spread",
            REPLICAS_GROUP,
            f"max by ({MODEL}) ({waiting}) - min by ({MODEL}) ({waiting})",
        ),
        Recording(
            "llm:replica_queue_max_over_mean",
            REPLICAS_GROUP,
            f"max by ({MODEL}) ({waiting}) / (avg by ({MODEL}) ({waiting}) > 0)",
        ),
        Recording(
            "llm:replica_queue_share",
            REPLICAS_GROUP,
            f"{waiting} / on ({MODEL}) group_left () (sum by ({MODEL}) ({waiting}) > 0)",
        ),
        Recording(
            "llm:replica_prefix_cache_hit_ratio",
            REPLICAS_GROUP,
            f"sum by ({REPLICA}) (rate(llm_prefix_cache_hits_total[5m]))"
            f" / (sum by ({REPLICA}) (rate(llm_prefix_cache_queries_total[5m])) > 0)",
        ),
        # the pod -> workload join: max by () as two cluster-role replicas export the same info series
        Recording(
            WORKLOAD_WAITING,
            REPLICAS_GROUP,
            f"sum by (namespace, workload) ({waiting} * on (namespace, pod) group_left (workload)"
            " max by (namespace, pod, workload) (llm_replica_pod_info))",
        ),
        # 1 while the autoscaler asks for its maximum (it cannot add capacity), else 0
        Recording(
            "llm:autoscaler_at_max",
            REPLICAS_GROUP,
            f"max by ({AUTOSCALER}) (llm_autoscaler_desired_replicas)"
            f" >= bool max by ({AUTOSCALER}) (llm_autoscaler_max_replicas)",
        ),
        # 1 while the autoscaler stays at its minimum although its workload's queue grows (its trigger does
        # not see the queue, or reacts too slowly), else 0
        Recording(
            "llm:autoscaler_at_min_while_queue_grows",
            REPLICAS_GROUP,
            f"(max by ({AUTOSCALER}) (llm_autoscaler_desired_replicas)"
            f" <= bool max by ({AUTOSCALER}) (llm_autoscaler_min_replicas))"
            f" * on (namespace, workload) group_left () (deriv({WORKLOAD_WAITING}[10m]) > bool 0)",
        ),
    ]


def _per_model_gpu(metric: str, model_of_pod: str) -> str:
    """A per-GPU series joined to the pods on it, then to the model those pods serve, max per model: uuid is
    unique in the cluster, pod names are unique in their namespace."""
    per_pod = f"max by (namespace, pod) ({metric} * on (uuid) group_left (namespace, pod) llm_gpu_pod_info)"
    return f"max by ({MODEL}) ({per_pod} * on (namespace, pod) group_left (model) {model_of_pod})"


def _gpu_peak(peak: str) -> str:
    """Each engine pod's GPUs' peak (`peak`: a per-uuid series), averaged over its GPUs; pod info on the many
    side, so pods time-sliced on one GPU each join it."""
    return f"avg by (namespace, pod) (llm_gpu_pod_info * on (uuid) group_left () max by (uuid) ({peak}))"


def model_utilization(counter: str, peak: str) -> str:
    """rate(`counter`, the engine's per-GPU estimate) over its GPUs' `peak`, averaged per model."""
    done = f"sum by (namespace, pod, model, dp_rank) (rate({counter}[5m]))"
    return f"avg by ({MODEL}) ({done} / on (namespace, pod) group_left () {_gpu_peak(peak)})"


def bandwidth_utilization() -> str:
    """MBU: the bytes the engine estimates it read per GPU (vLLM --enable-mfu-metrics) over the peak bandwidth."""
    return model_utilization("llm_estimated_read_bytes_per_gpu_total", "llm_gpu_memory_bandwidth_max_bytes_per_second")


def flops_utilization(t: Thresholds) -> str:
    """MFU: the FLOPs the engine estimates it ran per GPU over the datasheet's dense peak at `mfu_precision`."""
    peak = f'llm_gpu_peak_flops{{precision="{t.mfu_precision}"}}'
    return model_utilization("llm_estimated_flops_per_gpu_total", peak)


def _bottleneck(t: Thresholds) -> list[Recording]:
    waiting = f"sum by ({MODEL}) (llm_requests_waiting) > 0"
    kv = (
        f"(max by ({MODEL}) (llm_kv_cache_usage_ratio) > {t.bottleneck_kv_ratio} and on ({MODEL}) {waiting})"
        f" or on ({MODEL}) (sum by ({MODEL}) (rate(llm_preemptions_total[5m])) > 0)"
    )
    # Bandwidth used, per model: GPM's DRAM bandwidth where its GPUs have GPM (Hopper+); else the engine's own
    # estimate over the peak (MBU: A100, L4, older drivers); else NVML's memory busy ratio (a time share)
    model_of_pod = "group by (namespace, pod, model) (llm_requests_running > 0)"
    used = (
        f"{_per_model_gpu('llm_gpu_memory_bandwidth_utilization_ratio', model_of_pod)}"
        f" or on ({MODEL}) {bandwidth_utilization()}"
        f" or on ({MODEL}) {_per_model_gpu('llm_gpu_memory_busy_ratio', model_of_pod)}"
    )
    bandwidth = f"({used}) > {t.bottleneck_bandwidth_ratio}"
    # compute: requests wait although KV cache and bandwidth have room, or the engine's FLOPs are near the peak
    compute = f"({waiting}) or on ({MODEL}) ({flops_utilization(t)} > {t.bottleneck_compute_ratio})"
    signals = {
        "kv_capacity": kv,
        "memory_bandwidth": bandwidth,
        "compute": compute,
        "none": f"max by ({MODEL}) (llm_requests_running)",
    }
    out = [
        Recording(f"llm:bottleneck_signal:{name}", BOTTLENECK_GROUP, f"group by ({MODEL}) ({expr})")
        for name, expr in signals.items()
    ]
    # one class per model: the first signal in BOTTLENECKS order that holds
    parts = []
    for i, name in enumerate(BOTTLENECKS):
        expr = f"llm:bottleneck_signal:{name}"
        for earlier in BOTTLENECKS[:i]:
            expr = f"{expr} unless on ({MODEL}) llm:bottleneck_signal:{earlier}"
        parts.append(f'label_replace({expr}, "resource", "{name}", "", "")')
    out.append(Recording("llm:bottleneck", BOTTLENECK_GROUP, " or ".join(parts)))
    return out


DIAGNOSIS_GROUP = "llm-inference.diagnosis"
DIAGNOSIS = "llm:diagnosis"


def _diagnosis(t: Thresholds) -> list[Recording]:
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
        out.append(Recording(DIAGNOSIS, DIAGNOSIS_GROUP, condition, labels))
    return out


MODEL_GPUS = "llm:model_gpus"
CONTEXT_USED_P99 = "llm:request_context_tokens:p99_1h"


def _capacity(t: Thresholds) -> list[Recording]:
    # the GPUs serving each model: distinct uuids, so two pods time-sliced on one GPU count it once
    model_of_pod = "group by (namespace, pod, model) (llm_requests_running)"
    gpus = (
        f"count by ({MODEL}) (group by (namespace, model, uuid) (llm_gpu_pod_info"
        f" * on (namespace, pod) group_left (model) {model_of_pod}))"
    )
    out = [Recording(MODEL_GPUS, CAPACITY_GROUP, gpus)]
    for kind, counter in (("prompt", "llm_prompt_tokens_total"), ("generation", "llm_generation_tokens_total")):
        out.append(
            Recording(
                f"llm:{kind}_tokens_per_gpu:rate5m",
                CAPACITY_GROUP,
                f"sum by ({MODEL}) (rate({counter}[5m])) / on ({MODEL}) {MODEL_GPUS}",
            )
        )
    capacity = f"max by ({RANK}) (llm_kv_cache_capacity_tokens)"
    # tokens in use where the engine counts them (SGLang), else capacity times the free share (vLLM: a block
    # ratio, so the headroom is block-granular)
    headroom = (
        f"({capacity} - max by ({RANK}) (llm_kv_cache_used_tokens))"
        f" or ({capacity} * on ({RANK}) (1 - max by ({RANK}) (llm_kv_cache_usage_ratio)))"
    )
    limit = "max by (namespace, pod) (llm_engine_max_context_tokens)"
    used = " + ".join(
        f"histogram_quantile(0.99, sum by ({MODEL}, le) (rate(llm_request_{kind}_tokens_bucket[1h])))"
        for kind in ("prompt", "generation")
    )
    rejected = f"sum by ({MODEL}) (rate(llm_requests_rejected_total[5m]))"
    finished = f"sum by ({MODEL}) (rate(llm_requests_finished_total[5m]))"
    out += [
        Recording("llm:kv_cache_headroom_tokens", CAPACITY_GROUP, headroom),
        # requests of the full context length the KV cache holds at once
        Recording(
            "llm:kv_cache_concurrency_at_context_limit",
            CAPACITY_GROUP,
            f"{capacity} / on (namespace, pod) group_left () {limit}",
        ),
        # p99 prompt + p99 generation: at least the p99 of their sum, so the ratio below errs small
        Recording(CONTEXT_USED_P99, CAPACITY_GROUP, used),
        Recording(
            "llm:context_reserved_over_used",
            CAPACITY_GROUP,
            f"max by ({MODEL}) (llm_engine_max_context_tokens) / on ({MODEL}) ({CONTEXT_USED_P99} > 0)",
        ),
        Recording(
            "llm:spec_decode_acceptance_ratio:rate5m",
            CAPACITY_GROUP,
            f"sum by ({MODEL}) (rate(llm_spec_decode_accepted_tokens_total[5m]))"
            f" / (sum by ({MODEL}) (rate(llm_spec_decode_draft_tokens_total[5m])) > 0)",
        ),
        # model bandwidth and FLOPs utilisation: the engine's own estimates per GPU over its GPU's peaks
        Recording("llm:model_bandwidth_utilization", CAPACITY_GROUP, bandwidth_utilization()),
        Recording("llm:model_flops_utilization", CAPACITY_GROUP, flops_utilization(t)),
        # refused over offered (refused + finished); no traffic: no sample
        Recording(
            "llm:requests_rejected_ratio:rate5m",
            CAPACITY_GROUP,
            f"{rejected} / (({rejected} + on ({MODEL}) {finished}) > 0)",
        ),
    ]
    return out


def recordings(t: Thresholds = DEFAULT) -> list[Recording]:
    """Every recording rule of the bundle, in rule-file order."""
    return [
        Recording(r.name, r.group, scoped(r.expr, t.selector), r.labels)
        for r in (*_slo(t), *_replicas(), *_bottleneck(t), *_capacity(t), *cost.recordings(t), *_diagnosis(t))
    ]


def groups(t: Thresholds = DEFAULT) -> dict[str, list[Recording]]:
    out: dict[str, list[Recording]] = {}
    for rule in recordings(t):
        out.setdefault(rule.group, []).append(rule)
    return out
