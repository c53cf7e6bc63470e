"""Envoy AI Gateway's Prometheus families, read into per-tenant counts (pure: a body in, a Reading out).

Its external processor records the OpenTelemetry GenAI metrics (`internal/metrics/genai.go`) and exposes them
through the OTel Go Prometheus exporter on its admin port (1064, `/metrics`). After the exporter's translation
(dots to underscores, the unit `s` as `_seconds`; the unit `token` is a word of the name already, so no
suffix; histograms, so no `_total`) a tenant's tokens are the `_sum` of `gen_ai_client_token_usage` per
`gen_ai_token_type` and its requests the `_count` of `gen_ai_server_request_duration_seconds`, failed ones
with `error_type="_OTHER"` (every failure: an upstream status other than 2xx, a local reply, a processing
error). The tenant is a request header the gateway maps to a label: the controller's
`--metricsRequestHeaderAttributes` (Helm `controller.metricsRequestHeaderAttributes`, e.g.
`x-tenant-id:tenant.id`, exposed as `tenant_id`); a request without the header has no such label.

Releases (tests/gateways/data/README.md has the file and line of each name):

- v0.1.5 to v0.2.1: the provider label is `gen_ai_system_name`; no header is mapped to a label (no tenant).
- v0.3.0: the same provider label; Helm `controller.metricsRequestHeaderLabels` maps headers.
- v0.4.0 to v1.1.0: the provider label is `gen_ai_provider_name`; `controller.metricsRequestHeaderAttributes`
  maps headers (v0.4.0 also still took `metricsRequestHeaderLabels`).
The names read here (the two families, `gen_ai_token_type`, `gen_ai_request_model`, `error_type`) are those of
every release, so one reading serves them all.

Token types other than input and output (`total` up to v0.3.0; `cached_input`, `cache_creation_input`,
`reasoning` later) are parts of those two and are not read.
"""

from __future__ import annotations

from collections.abc import Sequence

from exporter.engines import parser
from exporter.gateways.reading import Reading

RELEASE = "v1.1.0"  # the release the body in tests/gateways/data/ was made with; /metrics names no version
PREFIX = "gen_ai_"
METRICS_PATH = "/metrics"  # the external processor's admin server (-adminPort, 1064 in the controller's pods)
SCOPE = 'otel_scope_name="envoyproxy/ai-gateway"'  # the meter name, on every series of the exporter
TOKENS = "gen_ai_client_token_usage_sum"
TOKEN_TYPES = {"input": "prompt", "output": "generation"}
REQUESTS = "gen_ai_server_request_duration_seconds_count"
WANTED = frozenset({TOKENS, REQUESTS})
MODEL = "gen_ai_request_model"  # after the backend's model name override: the model the engine was asked for


def detect(body: str) -> bool:
    """True when a series of the body comes from the gateway's meter (an idle gateway has none yet)."""
    return SCOPE in body


def read(body: str, tenant_labels: Sequence[str]) -> Reading:
    """The tenants' token and request counts in the body; ParseError for a body that is not the text format."""
    parsed = parser.parse(body, WANTED, PREFIX).samples
    reading = Reading()
    for name in (TOKENS, REQUESTS):
        for pairs, value in parsed.get(name, ()):
            labels = dict(pairs)
            if name == TOKENS:
                direction = TOKEN_TYPES.get(labels.get("gen_ai_token_type", ""))
                if direction is None:  # a part of input or output (cached_input, reasoning, ...)
                    continue
                key = ("tokens", direction)
            else:
                key = ("requests", "error" if labels.get("error_type") else "success")
            model = labels.get(MODEL, "")
            if not model:
                reading.dropped["no_model"] += 1
                continue
            tenant = next((labels[n] for n in tenant_labels if labels.get(n)), "")
            if not tenant:  # no mapped header on the request
                reading.dropped["no_tenant"] += 1
                continue
            reading.add(model, reading.tenant(tenant), key, value)
    return reading
