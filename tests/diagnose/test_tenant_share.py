"""waiting.tenant: the tenant that sends most of a queueing model's tokens through the gateway. Its query
evaluated by Prometheus' own engine (promtool) over the gateway series two exporter pods report; its judgement
over those results, alone and in a walk."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from exporter.diagnose.collect import queries as planned
from exporter.diagnose.limits import DEFAULT
from exporter.diagnose.model import Readings, Sample
from exporter.diagnose.promql import Scope, render
from exporter.diagnose.verdicts import tenant_share
from exporter.diagnose.walk import walk
from tests.bundle.servers import PROMTOOL

QUERY = render(tenant_share.queries(DEFAULT)["share"], Scope(window="15m"))


def tokens(pod: str, tenant: str, model: str, direction: str, kind: str = "interactive") -> str:
    """A series as Prometheus stores it from an exporter pod (the pod's target labels beside the family's), of
    an exporter that splits tokens by request kind."""
    return (
        f'llm_gateway_tokens_total{{namespace="monitoring", pod="{pod}", job="llm-exporter", gateway="litellm", '
        f'tenant="{tenant}", model="{model}", direction="{direction}", request_kind="{kind}"}}'
    )


# per minute: chat gets 1000 tokens a second through the gateway, 600 of team-a (500 prompt of two kinds, 100
# generated), 300 of team-b, 100 of the tenants past the bound; pod exp-b reads the same gateway a little later
# (lower counts: max keeps exp-a's)
SERIES = [
    {"series": tokens("exp-a", "team-a", "chat", "prompt"), "values": "0+18000x30"},
    {"series": tokens("exp-a", "team-a", "chat", "prompt", "batch"), "values": "0+12000x30"},
    {"series": tokens("exp-a", "team-a", "chat", "generation"), "values": "0+6000x30"},
    {"series": tokens("exp-b", "team-a", "chat", "prompt"), "values": "0+15000x30"},
    {"series": tokens("exp-b", "team-a", "chat", "prompt", "batch"), "values": "0+10000x30"},
    {"series": tokens("exp-a", "team-b", "chat", "prompt"), "values": "0+12000x30"},
    {"series": tokens("exp-a", "team-b", "chat", "generation"), "values": "0+6000x30"},
    {"series": tokens("exp-a", "other", "chat", "prompt"), "values": "0+6000x30"},
    {"series": tokens("exp-a", "team-b", "code", "prompt"), "values": "0+600x30"},
    {"series": tokens("exp-a", "team-c", "idle", "prompt"), "values": "500x30"},
]


def test_the_share_query_in_prometheus(tmp_path: Path) -> None:
    (tmp_path / "empty.rules.yaml").write_text("groups: []\n")
    case = {
        "rule_files": ["empty.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": SERIES,
                "promql_expr_test": [
                    {
                        "expr": f"round(1e6 * ({QUERY}))",  # to the millionth: a sum of rates is not exact
                        "eval_time": "30m",
                        # "other" is in the whole, never named; a model nobody sent to in the window has no share
                        "exp_samples": [
                            {"labels": '{model="chat", tenant="team-a"}', "value": 600000},
                            {"labels": '{model="chat", tenant="team-b"}', "value": 300000},
                            {"labels": '{model="code", tenant="team-b"}', "value": 1000000},
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "case.yaml").write_text(yaml.safe_dump(case))
    run = subprocess.run(
        [PROMTOOL, "test", "rules", "case.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


CHAT = {"namespace": "demo", "model": "chat"}
SHARES = [({"model": "chat", "tenant": "team-a"}, 0.6), ({"model": "chat", "tenant": "team-b"}, 0.3)]


def results(queue_share: float, shares: list[tuple[dict[str, str], float]] = SHARES) -> dict[str, Any]:
    """A walk's results where users of demo/chat wait, `queue_share` of their first-token time queueing."""
    return {
        "scope.namespaces": [({"namespace": "demo"}, 1)],
        "scope.targets": [({}, 2)],
        "waiting.unexplained.models": [(CHAT, 1)],
        "waiting.unexplained.ttft_p99": [(CHAT, 4.0)],
        "waiting.unexplained.queue_max": [(CHAT, 30)],
        "waiting.unexplained.queue_share": [(CHAT, queue_share)],
        tenant_share.VERDICT.qid("share"): shares,
    }


def readings(rows: dict[str, Any], model: str = "") -> Readings:
    texts = {qid: expr for _, qid, expr in planned(Scope())}
    samples = {qid: tuple(Sample(labels, v) for labels, v in r) for qid, r in rows.items()}
    return Readings("2026-12-05T14:15:00Z", "15m", texts, samples, DEFAULT, model)


def test_a_queue_names_the_tenant_with_most_of_its_requests() -> None:
    (finding,) = tenant_share.VERDICT.judge(readings(results(0.8)), [])
    assert finding.verdict == (
        "demo/chat queues and tenant team-a sent 60 % of its tokens through the gateway over the window (prompt and "
        "generated)"
    )
    assert (finding.stage, finding.owner, finding.namespace, finding.model) == ("waiting", "platform", "demo", "chat")
    assert (finding.evidence[0].query, finding.evidence[0].value) == (
        "sum by (model, tenant) (max by (gateway, tenant, model, direction) (sum without (request_kind) "
        '(rate(llm_gateway_tokens_total{job="llm-exporter", tenant!="other"}[15m])))) / on (model) group_left () '
        "(sum by (model) (max by (gateway, tenant, model, direction) (sum without (request_kind) "
        '(rate(llm_gateway_tokens_total{job="llm-exporter"}[15m])))) > 0)',
        0.6,
    )


def test_no_tenant_without_a_queue_or_without_a_majority() -> None:
    # the wait is prefill (10 % of first-token time queueing): the load's sender is no answer to it
    assert tenant_share.VERDICT.judge(readings(results(0.1)), []) == []
    # no tenant sends more than half: none is named
    even = [({"model": "chat", "tenant": "team-a"}, 0.5), ({"model": "chat", "tenant": "team-b"}, 0.5)]
    assert tenant_share.VERDICT.judge(readings(results(0.8, even)), []) == []
    # no gateway in front of the model
    assert tenant_share.VERDICT.judge(readings(results(0.8, [])), []) == []


def test_a_healthy_model_gives_no_tenant_line() -> None:
    rows = results(0.8) | {
        "waiting.unexplained.ttft_p99": [(CHAT, 0.3)],
        "waiting.unexplained.queue_max": [(CHAT, 1)],
    }
    assert tenant_share.VERDICT.judge(readings(rows), []) == []
    report = walk(readings(rows), "2026-12-05T14:00:00Z")
    assert (report.status, report.findings) == ("healthy", ())


def test_in_a_walk_it_is_context_beside_the_unexplained_wait() -> None:
    report = walk(readings(results(0.8)), "2026-12-05T14:00:00Z")
    assert [(f.verdict_id, f.model) for f in report.findings] == [
        ("waiting.unexplained", "chat"),
        ("waiting.tenant", "chat"),
    ]


QUEUE = render(tenant_share.queries(DEFAULT)["queue"], Scope(window="15m"))
QUEUED = render(tenant_share.queries(DEFAULT)["queued"], Scope(window="15m"))


def queued(pod: str, tenant: str, model: str, priority: str = "0") -> str:
    """A queue series as Prometheus stores it from an exporter pod reading an endpoint picker."""
    return (
        f'llm_gateway_queued_requests{{namespace="monitoring", pod="{pod}", job="llm-exporter", gateway="epp", '
        f'tenant="{tenant}", model="{model}", priority="{priority}"}}'
    )


# llama's queue: team-a holds 6 at priority 0 then 8 for the last 5 minutes, 2 at priority 10 (avg over 15m: 6.67 +
# 2), team-b 1, requests without a fairness id 1, the tenants past the bound 0.33 on average; pod exp-b reads the
# same picker (max keeps one); code's queue holds only requests without a fairness id; idle's tenant holds none
QUEUE_SERIES = [
    {"series": queued("exp-a", "team-a", "llama"), "values": "6x24 8x6"},
    {"series": queued("exp-b", "team-a", "llama"), "values": "6x24 8x6"},
    {"series": queued("exp-a", "team-a", "llama", "10"), "values": "2x30"},
    {"series": queued("exp-a", "team-b", "llama"), "values": "1x30"},
    {"series": queued("exp-a", "default-flow", "llama"), "values": "1x30"},
    {"series": queued("exp-a", "other", "llama"), "values": "0x24 1x6"},
    {"series": queued("exp-a", "default-flow", "code"), "values": "3x30"},
    {"series": queued("exp-a", "team-c", "idle"), "values": "0x30"},
]


def test_the_queue_queries_in_prometheus(tmp_path: Path) -> None:
    # over (15m, 30m]: 15 samples, the last 6 of them after the step (team-a 6*9+8*6 = 102, "other" 6: /15)
    (tmp_path / "empty.rules.yaml").write_text("groups: []\n")
    case = {
        "rule_files": ["empty.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": QUEUE_SERIES,
                "promql_expr_test": [
                    {
                        "expr": f"round(1e6 * ({QUEUE}))",
                        "eval_time": "30m",
                        # llama: 6.8 + 2 + 1 + 1 + 0.4 = 11.2 held; default-flow and "other" never named
                        "exp_samples": [
                            {"labels": '{model="llama", tenant="team-a"}', "value": 785714},
                            {"labels": '{model="llama", tenant="team-b"}', "value": 89286},
                        ],
                    },
                    {
                        "expr": f"round(1e6 * ({QUEUED}))",
                        "eval_time": "30m",
                        "exp_samples": [
                            {"labels": '{model="code"}', "value": 3000000},
                            {"labels": '{model="llama"}', "value": 11200000},
                        ],
                    },
                ],
            }
        ],
    }
    (tmp_path / "case.yaml").write_text(yaml.safe_dump(case))
    run = subprocess.run(
        [PROMTOOL, "test", "rules", "case.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


def with_queue(queue_share: float, shares: list[tuple[dict[str, str], float]]) -> dict[str, Any]:
    """A walk's results where demo/chat queues at the engine and in the endpoint picker in front of its pool."""
    return results(queue_share) | {
        tenant_share.VERDICT.qid("queue"): shares,
        tenant_share.VERDICT.qid("queued"): [({"model": "chat"}, 12.0)],
    }


def test_a_queue_in_the_picker_names_the_tenant_holding_most_of_it() -> None:
    held = [({"model": "chat", "tenant": "team-b"}, 0.75), ({"model": "chat", "tenant": "team-a"}, 0.25)]
    (finding,) = tenant_share.VERDICT.judge(readings(with_queue(0.8, held)), [])
    # team-a sends 60 % of the tokens, but team-b's requests are the ones waiting
    assert finding.verdict == (
        "demo/chat queues and tenant team-b held 75 % of the requests waiting in the gateway's queue in front of its "
        "pool over the window"
    )
    assert (finding.evidence[0].query, finding.evidence[0].value) == (
        "sum by (model, tenant) (max by (gateway, tenant, model) (sum without (priority) (avg_over_time("
        'llm_gateway_queued_requests{job="llm-exporter", tenant!~"other|default-flow"}[15m])))) / on (model) '
        "group_left () (sum by (model) (max by (gateway, tenant, model) (sum without (priority) (avg_over_time("
        'llm_gateway_queued_requests{job="llm-exporter"}[15m])))) > 0)',
        0.75,
    )


def test_a_queue_without_a_majority_tenant_is_judged_by_the_queue_alone() -> None:
    # no tenant holds more than half of the queue: the tokens' majority (team-a 60 %) names nobody either
    held = [({"model": "chat", "tenant": "team-b"}, 0.5), ({"model": "chat", "tenant": "team-a"}, 0.3)]
    assert tenant_share.VERDICT.judge(readings(with_queue(0.8, held)), []) == []
    # the requests waiting carry no fairness id: no tenant to name
    assert tenant_share.VERDICT.judge(readings(with_queue(0.8, [])), []) == []


def test_a_healthy_model_with_a_picker_queue_gives_no_tenant_line() -> None:
    held = [({"model": "chat", "tenant": "team-b"}, 0.9)]
    rows = with_queue(0.8, held) | {
        "waiting.unexplained.ttft_p99": [(CHAT, 0.3)],
        "waiting.unexplained.queue_max": [(CHAT, 1)],
    }
    assert tenant_share.VERDICT.judge(readings(rows), []) == []
    assert walk(readings(rows), "2026-12-05T14:00:00Z").status == "healthy"
