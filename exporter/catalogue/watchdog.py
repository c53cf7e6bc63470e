"""Query watchdog metrics (cluster role): the PromQL of KEDA autoscalers and dashboard ConfigMaps, run live."""

from __future__ import annotations

from functools import partial

from exporter.catalogue.spec import MetricSpec, Stability, counter, gauge

QUERY = ("kind", "namespace", "name", "location")

_g = partial(gauge, subsystem="cluster", role="cluster", stability=Stability.EXPERIMENTAL)

QUERY_EMPTY = _g(
    "llm_query_empty",
    "1 when the query (kind ScaledObject, ScaledJob or Dashboard) returned no series at the last check, 0 when "
    "it returned data. KEDA reads an empty result as 0 and scales down.",
    QUERY,
)
QUERY_EMPTY_REASON = _g(
    "llm_query_empty_reason",
    "1 for each empty query, with why: renamed (an engine release renamed the metric; "
    "llm_query_successor_info and the log name the successor and the rewritten query), never_present, "
    "disappeared, label_mismatch, operators (every selector has series) or unknown; the full diagnosis is in "
    "the exporter's log.",
    (*QUERY, "reason"),
)
QUERY_SUCCESSOR_INFO = _g(
    "llm_query_successor_info",
    "1 for each empty query whose missing names an engine release renamed: renamed (the names as queried, "
    "comma-separated), successor (their successors, in the same order) and fix (the query rewritten to them; "
    "empty when longer than 500 characters, then only the exporter's log has it). Alerts copy these labels.",
    (*QUERY, "renamed", "successor", "fix"),
)
QUERY_CHECK_ERRORS = counter(
    "llm_query_check_errors_total",
    "Queries or runs that could not be checked: unreachable, unauthorized (401/403), bad_query, credentials, "
    "partial_response (a store behind Thanos Query did not answer) or error (any other answer).",
    ("reason",),
    subsystem="cluster",
    role="cluster",
    stability=Stability.EXPERIMENTAL,
)
QUERY_CHECK_LAST_RUN = _g(
    "llm_query_check_last_run_timestamp_seconds",
    "Unix time at which the watchdog last finished a run against Prometheus.",
    (),
    unit="seconds",
)
QUERY_SOURCE_AVAILABLE = _g(
    "llm_query_source_available",
    "1 when the watchdog can list the kind (scaledobjects, scaledjobs, configmaps); 0 when its CRD is not "
    "installed or RBAC does not grant it.",
    ("resource",),
)

METRICS: tuple[MetricSpec, ...] = (
    QUERY_EMPTY,
    QUERY_EMPTY_REASON,
    QUERY_SUCCESSOR_INFO,
    QUERY_CHECK_ERRORS,
    QUERY_CHECK_LAST_RUN,
    QUERY_SOURCE_AVAILABLE,
)
