"""The Envoy AI Gateway reader on the bodies its v1.1.0 metrics package served (data/README.md), the registry of
gateway kinds, and the collector finding each kind from its body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter import config
from exporter.exposition import render
from exporter.gateways import envoy_ai_gateway, registry
from exporter.gateways.collector import Gateway, GatewayCollector, Scraped, build_families, from_target
from exporter.gateways.reading import KindSplit
from exporter.gateways.tenants import TenantBound
from tests.fakes.engine import FakeEngine

DATA = Path(__file__).parent / "data"
BODY = (DATA / "envoy-ai-gateway-v1.1.0.prom").read_text()
IDLE = (DATA / "envoy-ai-gateway-v1.1.0-idle.prom").read_text()
LITELLM = (DATA / "litellm-1.110.2.prom").read_text()
VLLM = (Path(__file__).parents[1] / "engines" / "golden" / "vllm-0.8.2.prom").read_text()
GATEWAY = Gateway("http://aigw:1064/metrics", "aigw", "auto", None, "", "")
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
BGE = "BAAI/bge-small-en-v1.5"


def exposition(body: str, keep: int) -> str:
    reading = envoy_ai_gateway.read(body, ["tenant_id"])
    folded = TenantBound(keep, 3600).fold(reading.counts, 0.0)
    families = build_families([Scraped(GATEWAY, "envoy_ai_gateway", "", reading, folded)], keep)
    return "\n".join(line for line in render(families).splitlines() if not line.startswith("#"))


def test_tokens_and_requests_per_tenant_header_of_the_real_body() -> None:
    # x-tenant-id mapped to tenant.id: the label tenant_id; team-a made two requests (one streamed), team-b a
    # chat and an embeddings request, team-c's got a 429 (error_type="_OTHER", no usage), team-d's read 20
    # cached tokens (part of its 50 input tokens, not added); one request came without the header
    assert exposition(BODY, 50) == "\n".join(
        [
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{BGE}",direction="prompt"}} 8',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",direction="generation"}} 45',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",direction="prompt"}} 42',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",direction="generation"}} 10',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",direction="prompt"}} 100',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-d",model="{LLAMA}",direction="generation"}} 6',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-d",model="{LLAMA}",direction="prompt"}} 50',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="team-b",model="{BGE}",outcome="success"}} 1',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",outcome="success"}} 2',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",outcome="success"}} 1',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="team-c",model="{LLAMA}",outcome="error"}} 1',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="team-d",model="{LLAMA}",outcome="success"}} 1',
            # the request without x-tenant-id: its input and output tokens and its request
            'llm_gateway_series_dropped{gateway="aigw",reason="no_tenant"} 3',
            'llm_gateway_up{gateway="aigw",kind="envoy_ai_gateway"} 1',
        ]
    )


def test_the_tenant_bound_folds_the_smallest_tenants_of_a_model() -> None:
    # Llama's tenants by tokens: team-b 110, team-a 87, team-d 56, team-c 0 (its request failed): two keep
    # their name, team-d's tokens and request and team-c's failed request are tenant="other"
    assert exposition(BODY, 2) == "\n".join(
        [
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{BGE}",direction="prompt"}} 8',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="other",model="{LLAMA}",direction="generation"}} 6',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="other",model="{LLAMA}",direction="prompt"}} 50',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",direction="generation"}} 45',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",direction="prompt"}} 42',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",direction="generation"}} 10',
            f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",direction="prompt"}} 100',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="team-b",model="{BGE}",outcome="success"}} 1',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="other",model="{LLAMA}",outcome="error"}} 1',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="other",model="{LLAMA}",outcome="success"}} 1',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",outcome="success"}} 2',
            f'llm_gateway_requests_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",outcome="success"}} 1',
            f'llm_gateway_tenants_folded{{gateway="aigw",model="{LLAMA}"}} 2',
            'llm_gateway_series_dropped{gateway="aigw",reason="no_tenant"} 3',
            'llm_gateway_up{gateway="aigw",kind="envoy_ai_gateway"} 1',
        ]
    )


TOKENS = [
    f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{BGE}",direction="prompt"}} 8',
    f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",direction="generation"}} 45',
    f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",direction="prompt"}} 42',
    f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",direction="generation"}} 10',
    f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",direction="prompt"}} 100',
    f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-d",model="{LLAMA}",direction="generation"}} 6',
    f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-d",model="{LLAMA}",direction="prompt"}} 50',
]


def test_v0_4_0_names_the_token_histogram_with_its_unit_and_reads_the_same() -> None:
    # exporter v0.60.0 writes gen_ai_client_token_usage_token; the same requests give the same series as v1.1.0
    body = (DATA / "envoy-ai-gateway-v0.4.0.prom").read_text()
    assert "gen_ai_client_token_usage_token_sum{" in body and "gen_ai_client_token_usage_sum{" not in body
    assert exposition(body, 50) == exposition(BODY, 50)


def test_v0_3_0_gives_tokens_but_no_request_count() -> None:
    # v0.3.0 records the request histogram when a backend is picked and at every response body chunk (team-c's
    # 429 as a success): its count is no request count, and its series say so (gen_ai_system_name)
    body = (DATA / "envoy-ai-gateway-v0.3.0.prom").read_text()
    assert "gen_ai_system_name=" in body and "gen_ai_client_token_usage_token_sum{" in body
    assert exposition(body, 50) == "\n".join(
        [
            *TOKENS,
            'llm_gateway_series_dropped{gateway="aigw",reason="no_tenant"} 2',
            'llm_gateway_series_dropped{gateway="aigw",reason="not_per_request"} 8',
            'llm_gateway_up{gateway="aigw",kind="envoy_ai_gateway"} 1',
        ]
    )


def test_the_release_table_names_each_token_histogram_the_reader_reads() -> None:
    assert sorted(envoy_ai_gateway.TOKENS) == ["gen_ai_client_token_usage_sum", "gen_ai_client_token_usage_token_sum"]
    assert sorted(envoy_ai_gateway.NOT_PER_REQUEST) == ["gen_ai_system_name"]
    assert [r.first for r in envoy_ai_gateway.RELEASES if r.header_flag] == ["v0.3.0", "v0.4.0", "v0.5.0"]


def test_without_the_mapped_label_in_tenant_labels_no_tenant_is_read() -> None:
    # LiteLLM's default labels name no tenant of Envoy AI Gateway: every sample read is dropped, and says why
    # (9 of input or output tokens, 6 of requests)
    reading = envoy_ai_gateway.read(BODY, list(config.DEFAULT_TENANT_LABELS))
    assert (reading.counts, dict(reading.dropped)) == ({}, {"no_tenant": 15})


def test_a_header_value_over_the_length_cap_is_counted_as_other() -> None:
    # the header is whatever a client sends: the real body's team-a line with a 129-character value
    line = next(
        line for line in BODY.splitlines() if line.startswith("gen_ai_client_token_usage_sum{") and "team-a" in line
    )
    long = line.replace('tenant_id="team-a"', f'tenant_id="{"x" * 129}"')
    reading = envoy_ai_gateway.read(long + "\n", ["tenant_id"])
    assert reading.counts == {(LLAMA, "other"): {("tokens", "prompt"): 42.0}}
    assert dict(reading.dropped) == {"tenant_too_long": 1}


def test_each_body_is_detected_as_its_own_kind_only() -> None:
    assert [k.name for k in registry.KINDS.values() if k.detect(BODY)] == ["envoy_ai_gateway"]
    assert [k.name for k in registry.KINDS.values() if k.detect(LITELLM)] == ["litellm"]
    assert registry.detect(VLLM) is None
    # a processor that served no request yet exposes only target_info, in every release made
    assert [registry.detect(p.read_text()) for p in sorted(DATA.glob("envoy-ai-gateway-*-idle.prom"))] == [None] * 3
    assert config.GATEWAY_KINDS == ("auto", "litellm", "envoy_ai_gateway", "epp")


def test_a_base_url_is_read_where_its_kind_serves_metrics() -> None:
    def target(kind: str) -> config.GatewayTarget:
        return config.GatewayTarget(url="http://aigw.envoy-gateway-system:1064", kind=kind)

    assert from_target(target("envoy_ai_gateway")).url == "http://aigw.envoy-gateway-system:1064/metrics"
    assert from_target(target("litellm")).url == "http://aigw.envoy-gateway-system:1064/metrics/"
    assert from_target(target("auto")).url == "http://aigw.envoy-gateway-system:1064/metrics/"


def test_the_collector_finds_each_kind_from_its_body_and_names_a_body_of_neither() -> None:
    bodies = {"/envoy/metrics": BODY, "/idle/metrics": IDLE, "/litellm/metrics/": LITELLM, "/vllm/metrics": VLLM}
    with FakeEngine(lambda path: (200, bodies[path]) if path in bodies else (404, "")) as server:
        targets: list[dict[str, object]] = [
            {"url": f"{server.url}/envoy/metrics", "labels": {"gateway": "envoy"}},
            {"url": f"{server.url}/idle/metrics", "labels": {"gateway": "idle-auto"}},
            {"url": f"{server.url}/idle/metrics", "labels": {"gateway": "idle"}, "kind": "envoy_ai_gateway"},
            {"url": f"{server.url}/litellm/metrics/", "labels": {"gateway": "litellm"}},
            {"url": f"{server.url}/vllm/metrics", "labels": {"gateway": "vllm"}},
        ]
        gateways = config.parse(config_text(targets)).gateways
        text = render(GatewayCollector(gateways).collect())
    lines = [line for line in text.splitlines() if line.startswith(("llm_gateway_up", "llm_gateway_scrape_error"))]
    assert lines == [
        'llm_gateway_up{gateway="envoy",kind="envoy_ai_gateway"} 1',
        'llm_gateway_up{gateway="idle",kind="envoy_ai_gateway"} 1',
        'llm_gateway_up{gateway="idle-auto",kind="unknown"} 0',
        'llm_gateway_up{gateway="litellm",kind="litellm"} 1',
        'llm_gateway_up{gateway="vllm",kind="unknown"} 0',
        'llm_gateway_scrape_error{gateway="idle-auto",kind="unknown",reason="unknown_kind"} 1',
        'llm_gateway_scrape_error{gateway="vllm",kind="unknown",reason="unknown_kind"} 1',
    ]
    # one tenant_labels list serves both kinds: the first label set on a series names its tenant
    assert f'llm_gateway_tokens_total{{gateway="envoy",tenant="team-a",model="{LLAMA}",direction="prompt"}} 42' in text
    assert 'llm_gateway_tokens_total{gateway="litellm",tenant="alice",model="tiny",direction="prompt"} 30' in text


def config_text(targets: list[dict[str, object]]) -> str:
    return json.dumps({"gateways": {"targets": targets, "tenant_labels": ["tenant_id", "end_user"]}})


@pytest.mark.parametrize("kind", ["envoy", "envoy-ai-gateway", "otel"])
def test_an_unknown_kind_is_refused_naming_the_kinds(kind: str) -> None:
    with pytest.raises(config.ConfigError) as caught:
        config.parse(f"gateways: {{targets: [{{url: 'http://g:1064', kind: {kind}}}]}}")
    refused = f"gateways.targets[0].kind: '{kind}' is not one of auto, litellm, envoy_ai_gateway, epp"
    assert refused in caught.value.errors


def test_tokens_by_request_kind_where_configured() -> None:
    # the operation the gateway labels every series with: chat and embeddings in the real body; only chat listed
    split = KindSplit(("gen_ai_operation_name",), frozenset({"chat"}))
    reading = envoy_ai_gateway.read(BODY, ["tenant_id"], split)
    folded = TenantBound(50, 3600).fold(reading.counts, 0.0)
    families = build_families([Scraped(GATEWAY, "envoy_ai_gateway", "", reading, folded)], 50, by_kind=True)
    tokens = [line for line in render(families).splitlines() if line.startswith("llm_gateway_tokens_total")]
    assert tokens == [
        f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{BGE}",direction="prompt",'
        'request_kind="other"} 8',
        f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",direction="generation",'
        'request_kind="chat"} 45',
        f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-a",model="{LLAMA}",direction="prompt",'
        'request_kind="chat"} 42',
        f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",direction="generation",'
        'request_kind="chat"} 10',
        f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-b",model="{LLAMA}",direction="prompt",'
        'request_kind="chat"} 100',
        f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-d",model="{LLAMA}",direction="generation",'
        'request_kind="chat"} 6',
        f'llm_gateway_tokens_total{{gateway="aigw",tenant="team-d",model="{LLAMA}",direction="prompt",'
        'request_kind="chat"} 50',
    ]
    # a label no series carries: every token is of kind "none"
    unset = envoy_ai_gateway.read(BODY, ["tenant_id"], KindSplit(("request_kind",), frozenset({"batch"})))
    assert {key[2] for values in unset.counts.values() for key in values if key[0] == "tokens"} == {"none"}
