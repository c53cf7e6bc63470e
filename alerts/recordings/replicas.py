"""Recording rules `llm-inference.replicas`: how one model's queue is spread over its replicas (routing, stage
1); the queue per workload (the engine series joined to `llm_replica_pod_info`), and whether its autoscaler is
held at its maximum, or at its minimum while that queue grows (cold start, stage 2)."""

from __future__ import annotations

from alerts.expr import MODEL
from alerts.model import Recording
from alerts.thresholds import Thresholds

GROUP = "llm-inference.replicas"
REPLICA = "namespace, model, pod"
AUTOSCALER = "namespace, workload, autoscaler, kind"
WORKLOAD_WAITING = "llm:workload_requests_waiting"


def recordings(t: Thresholds) -> list[Recording]:
    """The group's rules (no threshold of its own: `t` only for the groups' common signature)."""
    waiting = "llm:replica_requests_waiting"
    return [
        # data-parallel ranks of one pod share its queue: one number per replica
        Recording(waiting, GROUP, f"sum by ({REPLICA}) (llm_requests_waiting)"),
        Recording("llm:replica_requests_running", GROUP, f"sum by ({REPLICA}) (llm_requests_running)"),
        Recording(
            "llm:replica_queue_spread",
            GROUP,
            f"max by ({MODEL}) ({waiting}) - min by ({MODEL}) ({waiting})",
        ),
        Recording(
            "llm:replica_queue_max_over_mean",
            GROUP,
            f"max by ({MODEL}) ({waiting}) / (avg by ({MODEL}) ({waiting}) > 0)",
        ),
        Recording(
            "llm:replica_queue_share",
            GROUP,
            f"{waiting} / on ({MODEL}) group_left () (sum by ({MODEL}) ({waiting}) > 0)",
        ),
        Recording(
            "llm:replica_prefix_cache_hit_ratio",
            GROUP,
            f"sum by ({REPLICA}) (rate(llm_prefix_cache_hits_total[5m]))"
            f" / (sum by ({REPLICA}) (rate(llm_prefix_cache_queries_total[5m])) > 0)",
        ),
        # the pod -> workload join: max by () as two cluster-role replicas export the same info series
        Recording(
            WORKLOAD_WAITING,
            GROUP,
            f"sum by (namespace, workload) ({waiting} * on (namespace, pod) group_left (workload)"
            " max by (namespace, pod, workload) (llm_replica_pod_info))",
        ),
        # 1 while the autoscaler asks for its maximum (it cannot add capacity), else 0
        Recording(
            "llm:autoscaler_at_max",
            GROUP,
            f"max by ({AUTOSCALER}) (llm_autoscaler_desired_replicas)"
            f" >= bool max by ({AUTOSCALER}) (llm_autoscaler_max_replicas)",
        ),
        # 1 while the autoscaler stays at its minimum although its workload's queue grows (its trigger does
        # not see the queue, or reacts too slowly), else 0
        Recording(
            "llm:autoscaler_at_min_while_queue_grows",
            GROUP,
            f"(max by ({AUTOSCALER}) (llm_autoscaler_desired_replicas)"
            f" <= bool max by ({AUTOSCALER}) (llm_autoscaler_min_replicas))"
            f" * on (namespace, workload) group_left () (deriv({WORKLOAD_WAITING}[10m]) > bool 0)",
        ),
    ]
