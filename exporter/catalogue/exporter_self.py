"""The exporter's own health: build info and per-collector success and duration."""

from __future__ import annotations

from functools import partial

from exporter.catalogue.spec import MetricSpec, Stability, counter, gauge

_g = partial(gauge, subsystem="exporter", role="any")

BUILD_INFO = _g("llm_exporter_build_info", "Exporter build, value 1.", ("version", "python_version", "role"))
COLLECTOR_SUCCESS = _g(
    "llm_exporter_collector_success",
    "1 when the collector's last run succeeded; 0 when it raised or is unavailable (see the logs).",
    ("collector",),
)
COLLECTOR_DURATION = _g(
    "llm_exporter_collector_duration_seconds",
    "Time the collector's last run took.",
    ("collector",),
    unit="seconds",
)
COLLECTOR_TIMEOUTS = counter(
    "llm_exporter_collector_timeouts_total",
    "Scrapes at which the collector gave no result within its deadline (a hung NVML call, a stalled socket or "
    "engine); its series were left out of those scrapes and llm_exporter_collector_success was 0.",
    ("collector",),
    subsystem="exporter",
    role="any",
    stability=Stability.EXPERIMENTAL,
)
COLLECTOR_UNAVAILABLE = _g(
    "llm_exporter_collector_unavailable",
    "1 when the collector's source is absent on this machine (no NVML, no kubelet socket, no API server "
    "config): expected on some nodes, so it is not a failure; 0 otherwise.",
    ("collector",),
)

HTTP_REJECTED = counter(
    "llm_exporter_http_rejected_total",
    "HTTP connections and requests the exporter turned away, by reason: connection_limit (too many at once: "
    "a scrape storm), unauthorized (basic auth failed), tls_handshake (a client that does not speak the "
    "configured TLS).",
    ("reason",),
    subsystem="exporter",
    role="any",
)
LOG_SUPPRESSED = counter(
    "llm_exporter_log_messages_suppressed_total",
    "Log lines dropped by the rate limit (the same message from the same place, repeated within a minute).",
    ("level",),
    subsystem="exporter",
    role="any",
)

METRICS: tuple[MetricSpec, ...] = (
    BUILD_INFO,
    COLLECTOR_SUCCESS,
    COLLECTOR_DURATION,
    COLLECTOR_TIMEOUTS,
    COLLECTOR_UNAVAILABLE,
    HTTP_REJECTED,
    LOG_SUPPRESSED,
)
