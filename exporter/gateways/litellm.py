"""The LiteLLM proxy's Prometheus families, read into per-tenant counts (pure: a body in, a Reading out).

Provenance: the names and labels below are those of LiteLLM 1.110.2 (PyPI `litellm`),
`litellm/integrations/prometheus.py` and `litellm/types/integrations/prometheus.py`, and were checked against
the `/metrics` body of that proxy served on the CPU (tests/gateways/data/). prometheus_client adds `_total` to
every counter (`litellm_input_tokens_metric` is exposed as `litellm_input_tokens_metric_total`). Release notes
that matter here:
- every unset label is the string "None" (`str(None)`), and an unset key alias on the budget gauges is "";
- `end_user` is set only with `litellm_settings.enable_end_user_cost_tracking_prometheus_only: true`;
- the master key's requests carry `user="default_user_id"` and `hashed_api_key="litellm_proxy_master_key"`;
- past its own series caps (`prometheus_series_limits`) a counter records on one series whose labels are all
  "other", which reads here as tenant "other";
- `/metrics` asks for a key unless `require_auth_for_metrics_endpoint: false` (a target's `bearer_token_file`).
`hashed_api_key` identifies a key and is never read as a tenant.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from exporter.engines import parser
from exporter.gateways.reading import NO_SPLIT, Budget, Key, KindSplit, Reading

RELEASE = "1.110.2"  # the release the names were taken from; the proxy exposes no version on /metrics
PREFIX = "litellm_"
METRICS_PATH = "/metrics/"  # a mounted app: /metrics answers 307 to it
CURRENCY = "USD"  # LiteLLM prices in its model cost map are USD
UNSET = frozenset({"", "None"})

TOKENS = {"litellm_input_tokens_metric_total": "prompt", "litellm_output_tokens_metric_total": "generation"}
REQUESTS = "litellm_proxy_total_requests_metric_total"
SPEND = "litellm_spend_metric_total"
# scope -> (remaining gauge, max gauge, the labels naming the holder, first set wins)
BUDGETS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "team": ("litellm_remaining_team_budget_metric", "litellm_team_max_budget_metric", ("team_alias", "team")),
    "key": ("litellm_remaining_api_key_budget_metric", "litellm_api_key_max_budget_metric", ("api_key_alias",)),
    "user": ("litellm_remaining_user_budget_metric", "litellm_user_max_budget_metric", ("user",)),
    "end_user": ("litellm_remaining_customer_budget_metric", "litellm_customer_max_budget_metric", ("end_user",)),
}
WANTED = frozenset({*TOKENS, REQUESTS, SPEND, *(name for b in BUDGETS.values() for name in b[:2])})


def detect(body: str) -> bool:
    """True when the body is a LiteLLM proxy's (a family of its own is declared)."""
    return f"# TYPE {PREFIX}" in body or f"\n{PREFIX}" in body or body.startswith(PREFIX)


def set_value(labels: dict[str, str], names: Iterable[str]) -> str:
    """The value of the first of `names` that is set ("" when none is)."""
    return next((labels[n] for n in names if labels.get(n, "") not in UNSET), "")


def outcome(status: str) -> str:
    """A request's outcome from its HTTP status code."""
    if not status.isdigit():
        return "unknown"
    code = int(status)
    if code < 400:
        return "success"
    if code == 429:
        return "rate_limited"
    return "client_error" if code < 500 else "server_error"


def read(body: str, tenant_labels: Sequence[str], split: KindSplit = NO_SPLIT) -> Reading:
    """The tenants' counts and the budgets in a LiteLLM `/metrics` body, its tokens by request kind when `split`
    names labels; ParseError for a body that is not the text format."""
    parsed = parser.parse(body, WANTED, PREFIX).samples
    reading = Reading(currency=CURRENCY)

    def each(name: str, model_labels: Sequence[str], key_of: str | None) -> None:
        for pairs, value in parsed.get(name, ()):
            labels = dict(pairs)
            model = set_value(labels, model_labels)
            if not model:  # not a model's request (a 401 on /metrics counts as a request too)
                reading.dropped["no_model"] += 1
                continue
            tenant = set_value(labels, tenant_labels)
            if not tenant:
                reading.dropped["no_tenant"] += 1
                continue
            tenant = reading.tenant(tenant)
            key = (name, key_of) if key_of is not None else (name,)
            reading.add(model, tenant, _key(key, labels, split), value)

    for name, direction in TOKENS.items():
        each(name, ("model", "requested_model"), direction)
    each(REQUESTS, ("requested_model",), None)
    each(SPEND, ("model", "requested_model"), None)
    for scope, (remaining, limit, holder_labels) in BUDGETS.items():
        reading.budgets += _budgets(scope, parsed.get(remaining, ()), parsed.get(limit, ()), holder_labels, reading)
    return reading


def _key(key: tuple[str, ...], labels: dict[str, str], split: KindSplit) -> Key:
    name = key[0]
    if name in TOKENS:
        return split.tokens(key[1], labels, UNSET)
    if name == REQUESTS:
        return ("requests", outcome(labels.get("status_code", "")))
    return ("spend",)


def _budgets(
    scope: str,
    remaining: Iterable[tuple[tuple[tuple[str, str], ...], float]],
    limit: Iterable[tuple[tuple[tuple[str, str], ...], float]],
    holder_labels: Sequence[str],
    reading: Reading,
) -> list[Budget]:
    """The finite budgets of one scope by holder (LiteLLM reports +Inf for a holder without a budget)."""
    found: dict[str, list[float | None]] = {}
    for column, samples in enumerate((remaining, limit)):
        for pairs, value in samples:
            if not math.isfinite(value):
                continue
            holder = set_value(dict(pairs), holder_labels)
            if not holder:  # a key with no alias: its hash is all that names it, and that is never a label
                reading.dropped["budget_unnamed"] += 1
                continue
            found.setdefault(holder, [None, None])[column] = value
    return [Budget(scope, holder, values[0], values[1]) for holder, values in sorted(found.items())]
