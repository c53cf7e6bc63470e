"""Envoy AI Gateway's Prometheus families, read into per-tenant counts (pure: a body in, a Reading out).

Its external processor records the OpenTelemetry GenAI metrics (`internal/metrics/`) and exposes them through
the OTel Go Prometheus exporter on port 1064 at `/metrics`. A tenant's tokens are the `_sum` of the token usage
histogram per `gen_ai_token_type` (input: prompt, output: generation; `total`, `cached_input`,
`cache_creation_input` and `reasoning` are parts of those and are not read); its requests the `_count` of
`gen_ai_server_request_duration_seconds`, failed ones with `error_type="_OTHER"` (every failure alike: an
upstream status other than 2xx, a local reply, a processing error). The model is `gen_ai_request_model`. The
tenant is a request header the gateway maps to a label (`x-tenant-id:tenant.id` exposes `tenant_id`); a
request without the header has no such label.

What changed across releases (`RELEASES`; tests/gateways/data/README.md has the file and line of each, and a
body made with the metrics package of v0.3.0, v0.4.0 and v1.1.0): the exporter the release pins spells the
token histogram with or without the unit `token`, and up to v0.3.0 the request histogram was recorded when a
backend was picked and at every response body chunk (a 429 counted as a success), so its `_count` is no request
count: those releases, told apart by their `gen_ai_system_name` label, give tokens only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from exporter.engines import parser
from exporter.gateways.reading import NO_SPLIT, KindSplit, Reading


@dataclass(frozen=True, slots=True)
class Release:
    first: str
    last: str
    tokens: str  # the token usage histogram, as the pinned OTel Prometheus exporter names it
    provider_label: str  # on every series: which releases a body comes from
    per_request: bool  # the request duration's `_count` counts requests (once each, failures with error_type)
    header_flag: str  # the controller's flag (and Helm value) that maps request headers to labels; "": none


RELEASES = (
    # exporter v0.56.0, v0.58.0: no suffix for a unit it does not know ("token")
    Release("v0.1.5", "v0.2.1", "gen_ai_client_token_usage", "gen_ai_system_name", False, ""),
    # exporter v0.59.1, v0.60.0 (UTF-8 names): the unit appended, then escaped to underscores on the wire
    Release("v0.3.0", "v0.3.0", "gen_ai_client_token_usage_token", "gen_ai_system_name", False,
            "metricsRequestHeaderLabels"),
    Release("v0.4.0", "v0.4.0", "gen_ai_client_token_usage_token", "gen_ai_provider_name", True,
            "metricsRequestHeaderAttributes"),
    # exporter v0.61.0 and later (UnderscoreEscapingWithSuffixes): a unit that is a word of the name is not added
    Release("v0.5.0", "v1.1.0", "gen_ai_client_token_usage", "gen_ai_provider_name", True,
            "metricsRequestHeaderAttributes"),
)  # fmt: skip
PREFIX = "gen_ai_"
METRICS_PATH = "/metrics"  # the external processor's admin (v0.3.0: metrics) server, port 1064
SCOPE = 'otel_scope_name="envoyproxy/ai-gateway"'  # the meter name, on every series of the exporter
TOKENS = frozenset(r.tokens + "_sum" for r in RELEASES)
TOKEN_TYPES = {"input": "prompt", "output": "generation"}
REQUESTS = "gen_ai_server_request_duration_seconds_count"
WANTED = frozenset({*TOKENS, REQUESTS})
MODEL = "gen_ai_request_model"  # after the backend's model name override: the model the engine was asked for
# a provider label only releases whose request count is no request count carry
NOT_PER_REQUEST = frozenset(r.provider_label for r in RELEASES if not r.per_request) - frozenset(
    r.provider_label for r in RELEASES if r.per_request
)


def detect(body: str) -> bool:
    """True when a series of the body comes from the gateway's meter (an idle gateway has none yet)."""
    return SCOPE in body


def read(body: str, tenant_labels: Sequence[str], split: KindSplit = NO_SPLIT) -> Reading:
    """The tenants' token and request counts in the body, the tokens by request kind when `split` names labels;
    ParseError for a body that is not the text format."""
    parsed = parser.parse(body, WANTED, PREFIX).samples
    reading = Reading()
    for name in (*sorted(TOKENS), REQUESTS):
        for pairs, value in parsed.get(name, ()):
            labels = dict(pairs)
            if name != REQUESTS:
                direction = TOKEN_TYPES.get(labels.get("gen_ai_token_type", ""))
                if direction is None:  # a part of input or output, or their total
                    continue
                key = split.tokens(direction, labels)
            elif NOT_PER_REQUEST.intersection(labels):
                reading.dropped["not_per_request"] += 1
                continue
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
