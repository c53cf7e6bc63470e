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

METRICS: tuple[MetricSpec, ...] = (STARTUP, READY, STARTING, STARTING_OLDEST)
