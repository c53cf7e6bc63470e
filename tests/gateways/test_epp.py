"""The endpoint picker's flow control queue per tenant (fairness id), on a body its v1.5.0 metrics package wrote
(tests/fixtures/epp/PROVENANCE.json): the reader, the registry finding the kind from the body, the tenant bound
of a gauge and the exposition."""

from __future__ import annotations

from pathlib import Path

from exporter.exposition import render
from exporter.gateways import epp, registry
from exporter.gateways.collector import Gateway, Scraped, build_families
from exporter.gateways.tenants import TenantBound, bound_queued

FIXTURES = Path(__file__).parents[1] / "fixtures" / "epp"
BODY = (FIXTURES / "gie-v1.5.0-flow-control.prom").read_text()
DATA = Path(__file__).parent / "data"
GATEWAY = Gateway("http://epp:9090/metrics", "epp", "auto", None, "", "")


def exposition(body: str, keep: int) -> str:
    reading = epp.read(body)
    folded = TenantBound(keep, 3600).fold(reading.counts, 0.0)
    families = build_families([Scraped(GATEWAY, "epp", "", reading, folded)], keep)
    return "\n".join(line for line in render(families).splitlines() if not line.startswith("#"))


def test_the_requests_each_fairness_id_holds_by_model_and_priority() -> None:
    # team-a 5 at priority 0; team-b 2 at 0 and 1 at 10; one request without a fairness id; team-c's finished
    assert epp.read(BODY).queued == {
        ("llama", "default-flow", "0"): 1.0,
        ("llama", "team-a", "0"): 5.0,
        ("llama", "team-b", "0"): 2.0,
        ("llama", "team-b", "10"): 1.0,
        ("llama", "team-c", "0"): 0.0,
    }


def test_the_exposition_of_the_real_body() -> None:
    assert exposition(BODY, 50) == "\n".join(
        [
            'llm_gateway_queued_requests{gateway="epp",tenant="default-flow",model="llama",priority="0"} 1',
            'llm_gateway_queued_requests{gateway="epp",tenant="team-a",model="llama",priority="0"} 5',
            'llm_gateway_queued_requests{gateway="epp",tenant="team-b",model="llama",priority="0"} 2',
            'llm_gateway_queued_requests{gateway="epp",tenant="team-b",model="llama",priority="10"} 1',
            'llm_gateway_queued_requests{gateway="epp",tenant="team-c",model="llama",priority="0"} 0',
            'llm_gateway_up{gateway="epp",kind="epp"} 1',
        ]
    )


def test_past_the_bound_the_smallest_queues_are_summed_per_priority_as_other() -> None:
    # by requests held: team-a 5, team-b 3, default-flow 1, team-c 0: two keep their name
    assert exposition(BODY, 2) == "\n".join(
        [
            'llm_gateway_queued_requests{gateway="epp",tenant="other",model="llama",priority="0"} 1',
            'llm_gateway_queued_requests{gateway="epp",tenant="team-a",model="llama",priority="0"} 5',
            'llm_gateway_queued_requests{gateway="epp",tenant="team-b",model="llama",priority="0"} 2',
            'llm_gateway_queued_requests{gateway="epp",tenant="team-b",model="llama",priority="10"} 1',
            'llm_gateway_tenants_folded{gateway="epp",model="llama"} 2',
            'llm_gateway_up{gateway="epp",kind="epp"} 1',
        ]
    )


def test_a_gauge_bound_keeps_no_state_and_ties_by_name() -> None:
    queued = {("m", "b", "0"): 2.0, ("m", "a", "0"): 2.0, ("m", "other", "0"): 4.0, ("n", "c", "1"): 1.0}
    assert bound_queued(queued, 1) == (
        {("m", "a", "0"): 2.0, ("m", "other", "0"): 6.0, ("n", "c", "1"): 1.0},
        {"m": 1},
    )


def test_the_registry_finds_the_picker_from_its_body_and_no_other_kind_claims_it() -> None:
    kind = registry.detect(BODY)
    assert kind is not None and (kind.name, kind.metrics_path) == ("epp", "/metrics")
    assert registry.KINDS["epp"] is kind
    assert [k.name for k in registry.KINDS.values() if k.detect(BODY)] == ["epp"]
    for other in ("litellm-1.110.2.prom", "envoy-ai-gateway-v1.1.0.prom"):
        assert not epp.detect((DATA / other).read_text())


def test_before_v1_3_0_the_queue_names_no_model() -> None:
    # v1.1.0's gauge has fairness_id and priority only (pkg/epp/metrics/metrics.go:252)
    body = (FIXTURES / "gie-v1.1.0-flow-control.prom").read_text()
    assert epp.read(body).queued == {("", "default-flow", "0"): 1.0, ("", "team-a", "0"): 3.0}
    kind = registry.detect(body)
    assert kind is not None and kind.name == "epp"


def test_a_fairness_id_over_the_length_cap_is_counted_as_other() -> None:
    # the header is whatever a client sends
    line = next(line for line in BODY.splitlines() if line.startswith(epp.QUEUE + "{") and "team-a" in line)
    reading = epp.read(line.replace('fairness_id="team-a"', f'fairness_id="{"x" * 129}"') + "\n")
    assert reading.queued == {("llama", "other", "0"): 5.0}
    assert dict(reading.dropped) == {"tenant_too_long": 1}
