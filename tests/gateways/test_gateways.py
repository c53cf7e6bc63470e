"""The LiteLLM reader, the tenant bound and the gateway families, on the real proxy's body (data/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter import config
from exporter.exposition import render
from exporter.gateways import litellm
from exporter.gateways.collector import Gateway, Scraped, build_families
from exporter.gateways.reading import KindSplit
from exporter.gateways.tenants import TenantBound

BODY = (Path(__file__).parent / "data" / "litellm-1.110.2.prom").read_text()
GATEWAY = Gateway("http://litellm:4000/metrics/", "litellm", "auto", None, "", "")


def exposition(body: str, tenant_labels: list[str], keep: int) -> str:
    reading = litellm.read(body, tenant_labels)
    folded = TenantBound(keep, 3600).fold(reading.counts, 0.0)
    families = build_families([Scraped(GATEWAY, "litellm", "", reading, folded)], keep)
    return "\n".join(line for line in render(families).splitlines() if not line.startswith("#"))


def test_end_users_of_the_real_body_past_the_bound_are_other() -> None:
    # ada, alice, bob, bo: 33, 35, 35, 33 tokens; three keep their name (ties by name), bo is "other"
    assert exposition(BODY, ["end_user"], 3) == "\n".join(
        [
            'llm_gateway_tokens_total{gateway="litellm",tenant="ada",model="tiny",direction="generation"} 4',
            'llm_gateway_tokens_total{gateway="litellm",tenant="ada",model="tiny",direction="prompt"} 29',
            'llm_gateway_tokens_total{gateway="litellm",tenant="alice",model="tiny",direction="generation"} 5',
            'llm_gateway_tokens_total{gateway="litellm",tenant="alice",model="tiny",direction="prompt"} 30',
            'llm_gateway_tokens_total{gateway="litellm",tenant="bob",model="tiny",direction="generation"} 5',
            'llm_gateway_tokens_total{gateway="litellm",tenant="bob",model="tiny",direction="prompt"} 30',
            'llm_gateway_tokens_total{gateway="litellm",tenant="other",model="tiny",direction="generation"} 4',
            'llm_gateway_tokens_total{gateway="litellm",tenant="other",model="tiny",direction="prompt"} 29',
            # carol asked for a model the proxy does not serve: it labels the request model "other"
            'llm_gateway_requests_total{gateway="litellm",tenant="carol",model="other",outcome="client_error"} 1',
            'llm_gateway_requests_total{gateway="litellm",tenant="ada",model="tiny",outcome="success"} 1',
            'llm_gateway_requests_total{gateway="litellm",tenant="alice",model="tiny",outcome="success"} 1',
            'llm_gateway_requests_total{gateway="litellm",tenant="bob",model="tiny",outcome="success"} 1',
            'llm_gateway_requests_total{gateway="litellm",tenant="other",model="tiny",outcome="success"} 1',
            'llm_gateway_spend_total{gateway="litellm",tenant="ada",model="tiny",currency="USD"} 0',
            'llm_gateway_spend_total{gateway="litellm",tenant="alice",model="tiny",currency="USD"} 0',
            'llm_gateway_spend_total{gateway="litellm",tenant="bob",model="tiny",currency="USD"} 0',
            'llm_gateway_spend_total{gateway="litellm",tenant="other",model="tiny",currency="USD"} 0',
            'llm_gateway_tenants_folded{gateway="litellm",model="tiny"} 1',
            # the two refused scrapes of /metrics name no model; the request without an end user, no tenant
            'llm_gateway_series_dropped{gateway="litellm",reason="no_model"} 2',
            'llm_gateway_series_dropped{gateway="litellm",reason="no_tenant"} 4',
            'llm_gateway_up{gateway="litellm",kind="litellm"} 1',
        ]
    )


def test_default_tenant_labels_read_the_master_keys_user_before_the_end_user() -> None:
    # team alias, team and key alias are "None" without a database; the master key's user is set
    lines = exposition(BODY, list(config.DEFAULT_TENANT_LABELS), 50).splitlines()
    assert [line for line in lines if line.startswith("llm_gateway_tokens_total")] == [
        'llm_gateway_tokens_total{gateway="litellm",tenant="default_user_id",model="tiny",direction="generation"} 21',
        'llm_gateway_tokens_total{gateway="litellm",tenant="default_user_id",model="tiny",direction="prompt"} 147',
    ]
    assert "litellm_proxy_master_key" not in "\n".join(lines)


BUDGETS = """# TYPE litellm_remaining_team_budget_metric gauge
litellm_remaining_team_budget_metric{team="0f1e",team_alias="search"} 12.5
litellm_remaining_team_budget_metric{team="7a2b",team_alias="None"} 3.0
litellm_remaining_team_budget_metric{team="9c3d",team_alias="chat"} +Inf
# TYPE litellm_team_max_budget_metric gauge
litellm_team_max_budget_metric{team="0f1e",team_alias="search"} 100.0
litellm_team_max_budget_metric{team="7a2b",team_alias="None"} 10.0
# TYPE litellm_remaining_api_key_budget_metric gauge
litellm_remaining_api_key_budget_metric{api_key_alias="",hashed_api_key="88d4266fd4e6338d13b845fcf2895"} 1.0
litellm_remaining_api_key_budget_metric{api_key_alias="batch",hashed_api_key="5c2e6a0b"} 0.25
litellm_remaining_api_key_budget_metric{api_key_alias="ci",hashed_api_key="1d9f"} 4.0
"""


def test_finite_budgets_by_holder_never_by_key_hash() -> None:
    # the gauges' shapes as LiteLLM 1.110.2 writes them (+Inf: no budget); one key of a scope is kept (the least left)
    assert exposition(BUDGETS, ["team_alias"], 1) == "\n".join(
        [
            'llm_gateway_budget_remaining{gateway="litellm",scope="key",tenant="batch",currency="USD"} 0.25',
            'llm_gateway_budget_remaining{gateway="litellm",scope="team",tenant="7a2b",currency="USD"} 3',
            'llm_gateway_budget_limit{gateway="litellm",scope="team",tenant="7a2b",currency="USD"} 10',
            'llm_gateway_series_dropped{gateway="litellm",reason="budget_over_limit"} 2',
            'llm_gateway_series_dropped{gateway="litellm",reason="budget_unnamed"} 1',
            'llm_gateway_up{gateway="litellm",kind="litellm"} 1',
        ]
    )


def synthetic(tenants: int, scale: float) -> str:
    """A LiteLLM body with `tenants` end users of one model, tenant i with (i + 1) * scale prompt tokens."""
    lines = ["# TYPE litellm_input_tokens_metric_total counter"]
    for i in range(tenants):
        labels = f'end_user="user-{i:05d}",hashed_api_key="h{i}",model="m",team="None",team_alias="None"'
        lines.append(f"litellm_input_tokens_metric_total{{{labels}}} {(i + 1) * scale}")
    return "\n".join(lines) + "\n"


def test_ten_thousand_tenants_stay_within_the_bound_and_the_fold_is_counted() -> None:
    bound = TenantBound(50, 600)
    first = litellm.read(synthetic(10_000, 1.0), ["end_user"])
    folded = bound.fold(first.counts, 0.0)
    assert sorted(t for _, t in folded.named) == [f"user-{i:05d}" for i in range(9_950, 10_000)]
    assert folded.folded == {"m": 9_950}
    assert folded.other == {"m": {("tokens", "prompt"): sum(range(1, 9_951))}}
    # every tenant doubles: "other" grows by the folded tenants' increases only, never backwards
    second = bound.fold(litellm.read(synthetic(10_000, 2.0), ["end_user"]).counts, 60.0)
    assert second.other == {"m": {("tokens", "prompt"): 2 * sum(range(1, 9_951))}}
    assert len(second.named) == 50
    families = build_families([Scraped(GATEWAY, "litellm", "", first, folded)], 50)
    assert sum(len(f.samples) for f in families) == 50 + 1 + 1 + 1  # named, other, folded count, up
    # past the idle time, tenants whose counts did not move are exported under no name
    idle = bound.fold(litellm.read(synthetic(10_000, 2.0), ["end_user"]).counts, 700.0)
    assert (idle.named, idle.folded, idle.idle) == ({}, {}, {"m": 10_000})


def test_a_tenant_moving_between_named_and_other_never_counts_twice() -> None:
    bound = TenantBound(1, 600)
    a, b = ("m", "a"), ("m", "b")
    prompt = ("tokens", "prompt")
    assert bound.fold({a: {prompt: 10.0}, b: {prompt: 5.0}}, 0).other == {"m": {prompt: 5.0}}
    # b overtakes a: b is named with its own total, a's increase (2) goes to other
    step = bound.fold({a: {prompt: 12.0}, b: {prompt: 30.0}}, 1)
    assert step.named == {b: {prompt: 30.0}} and step.other == {"m": {prompt: 7.0}}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("gateways: {tenant_labels: [hashed_api_key]}", "gateways.tenant_labels: 'hashed_api_key' carries a key"),
        ("gateways: {targets: [{url: 'http://g:4000', labels: {pod: x}}]}", "gateways.targets[0].labels.pod: only"),
        ("gateways: {targets: [{url: 'http://g:4000', kind: envoy}]}", "gateways.targets[0].kind: 'envoy' is not"),
        ("gateways: {max_tenants_per_model: 0}", "gateways.max_tenants_per_model: must be in [1, 10000]"),
        ("gateways: {tenant_labels: [null]}", "gateways.tenant_labels[0]: expected str, got null"),
        ("gateways: {request_kind_labels: [route]}", "gateways.request_kinds: list the request kinds to keep"),
        ("gateways: {request_kind_labels: [api_key], request_kinds: [a]}", "gateways.request_kind_labels: 'api_key'"),
        ("gateways: {request_kind_labels: [x-kind], request_kinds: [a]}", "gateways.request_kind_labels: 'x-kind' is"),
        ("gateways: {request_kind_labels: [r], request_kinds: [other]}", "gateways.request_kinds: 'other' must be"),
        (
            f"gateways: {{request_kind_labels: [r], request_kinds: [{', '.join('k' + str(i) for i in range(21))}]}}",
            "gateways.request_kinds: at most 20",
        ),
    ],
)
def test_bad_gateway_config_names_the_key(text: str, error: str) -> None:
    with pytest.raises(config.ConfigError) as caught:
        config.parse(text)
    assert any(e.startswith(error) for e in caught.value.errors), caught.value.errors


def test_tokens_by_the_model_name_the_client_asked_where_configured() -> None:
    # requested_model is on LiteLLM's token series: the alias a client asked for, one request kind per alias
    split = KindSplit(("requested_model",), frozenset({"tiny"}))
    reading = litellm.read(BODY, ["end_user"], split)
    assert {k: v for k, v in reading.counts[("tiny", "alice")].items() if k[0] == "tokens"} == {
        ("tokens", "prompt", "tiny"): 30.0,
        ("tokens", "generation", "tiny"): 5.0,
    }
    families = build_families(
        [Scraped(GATEWAY, "litellm", "", reading, TenantBound(50, 3600).fold(reading.counts, 0.0))], 50, by_kind=True
    )
    assert [
        line for line in render(families).splitlines() if 'tokens_total{gateway="litellm",tenant="alice"' in line
    ] == [
        'llm_gateway_tokens_total{gateway="litellm",tenant="alice",model="tiny",direction="generation",'
        'request_kind="tiny"} 5',
        'llm_gateway_tokens_total{gateway="litellm",tenant="alice",model="tiny",direction="prompt",'
        'request_kind="tiny"} 30',
    ]


def test_an_end_user_name_over_the_length_cap_is_counted_as_other() -> None:
    # the end user is whatever a client sends in `user`: its length is not the gateway's to bound
    long = "x" * 129
    body = (
        "# TYPE litellm_input_tokens_metric_total counter\n"
        f'litellm_input_tokens_metric_total{{end_user="{long}",model="m",team="None"}} 7.0\n'
    )
    assert exposition(body, ["end_user"], 50) == "\n".join(
        [
            'llm_gateway_tokens_total{gateway="litellm",tenant="other",model="m",direction="prompt"} 7',
            'llm_gateway_series_dropped{gateway="litellm",reason="tenant_too_long"} 1',
            'llm_gateway_up{gateway="litellm",kind="litellm"} 1',
        ]
    )
