"""Replica metrics: how long engine replicas take to start, phase by phase (the cluster role's pod watch, and
the node role's first tokens), and how many are starting."""

from __future__ import annotations

from functools import partial

from exporter.catalogue.spec import MetricSpec, Stability, gauge, histogram

WORKLOAD = ("namespace", "workload")

_g = partial(gauge, subsystem="cluster", role="cluster", stability=Stability.EXPERIMENTAL)

STARTUP = histogram(
    "llm_replica_startup_seconds",
    "Start-up of engine replicas this exporter saw start, by phase: scheduling (created to scheduled) and "
    "starting (scheduled to Ready) from the cluster role, first_token (Ready to the first scrape whose "
    "time-to-first-token count is non-zero, to the scrape interval) from the node role's discovered pods. "
    "Autoscalers are late by this much: set minimum replicas from it.",
    (*WORKLOAD, "phase"),
    subsystem="cluster",
    role="any",
    stability=Stability.EXPERIMENTAL,
)
READY = _g("llm_replica_ready", "Engine pods of the workload that are Ready.", WORKLOAD)
STARTING = _g("llm_replica_starting", "Engine pods of the workload created but not yet Ready (0: none).", WORKLOAD)
STARTING_OLDEST = _g(
    "llm_replica_starting_oldest_seconds",
    "Seconds since the oldest engine pod that is not yet Ready was created.",
    WORKLOAD,
    unit="seconds",
)

POD_INFO = _g(
    "llm_replica_pod_info",
    "1 per engine pod, naming its workload: joins the engine series (by namespace and pod) to the workload's "
    "replicas and autoscaler.",
    ("namespace", "pod", "workload"),
)

MODEL_INFO = _g(
    "llm_model_info",
    "1 per engine pod, naming what it serves as its pod spec and status say: the model, served model name, "
    "revision, quantization, dtype and max_model_len arguments of its engine (vLLM, SGLang, TGI), its image and "
    "the digest its container status says ran (else the one the image pins), and engine_version, the image tag "
    'where it is one of the engine\'s releases. "" where the pod does not say.',
    (
        "namespace",
        "pod",
        "model",
        "served_model_name",
        "revision",
        "image",
        "image_digest",
        "engine",
        "engine_version",
        "quantization",
        "dtype",
        "max_model_len",
    ),
)

# The autoscaler (HPA, or the HPA a KEDA ScaledObject or an AIBrix PodAutoscaler drives) whose target is an
# engine workload
AUTOSCALER = (*WORKLOAD, "autoscaler", "kind")
AUTOSCALER_DESIRED = _g(
    "llm_autoscaler_desired_replicas", "Replicas the autoscaler last asked for (its HPA's status).", AUTOSCALER
)
AUTOSCALER_CURRENT = _g(
    "llm_autoscaler_current_replicas", "Replicas of the target as the autoscaler last saw them.", AUTOSCALER
)
AUTOSCALER_MIN = _g(
    "llm_autoscaler_min_replicas",
    "The autoscaler's minimum replicas (its HPA's: at least 1, also for a KEDA ScaledObject that scales to 0).",
    AUTOSCALER,
)
AUTOSCALER_MAX = _g("llm_autoscaler_max_replicas", "The autoscaler's maximum replicas.", AUTOSCALER)
AUTOSCALER_LIMITED = _g(
    "llm_autoscaler_scaling_limited",
    "1 when the autoscaler wanted more replicas than its maximum or fewer than its minimum (the HPA's "
    "ScalingLimited condition), else 0.",
    AUTOSCALER,
)

METRICS: tuple[MetricSpec, ...] = (
    STARTUP,
    READY,
    STARTING,
    STARTING_OLDEST,
    POD_INFO,
    MODEL_INFO,
    AUTOSCALER_DESIRED,
    AUTOSCALER_CURRENT,
    AUTOSCALER_MIN,
    AUTOSCALER_MAX,
    AUTOSCALER_LIMITED,
)
