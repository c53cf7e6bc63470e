"""The pure parts of diagnose: each verdict judged over hand-made query results, the gate, the ranking, the
reports, and the tables that must agree with the bundle (thresholds, dashboard panels, recording rules)."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from alerts import recording
from alerts.thresholds import DEFAULT as THRESHOLDS
from exporter import cli
from exporter.diagnose import panels, render
from exporter.diagnose.collect import queries as planned
from exporter.diagnose.limits import DEFAULT, Limits
from exporter.diagnose.model import OWNERS, STAGES, Finding, Readings, Sample, number
from exporter.diagnose.promql import Scope
from exporter.diagnose.promql import render as render_query
from exporter.diagnose.registry import VERDICTS
from exporter.diagnose.verdicts import (
    autoscaler_at_min,
    autoscaler_query_empty,
    compute,
    fragmented,
    queue_skew,
    waiting,
)
from exporter.diagnose.walk import Report, ScopeError, rank, walk

ROOT = Path(__file__).resolve().parents[2]
AT = "2026-01-31T14:15:00Z"


def readings(results: dict[str, Any], model: str = "") -> Readings:
    texts = {qid: expr for _, qid, expr in planned(Scope())}
    samples = {qid: tuple(Sample(labels, value) for labels, value in rows) for qid, rows in results.items()}
    return Readings(AT, "15m", texts, samples, DEFAULT, model)


ENGINES: dict[str, Any] = {"scope.namespaces": [({"namespace": "demo"}, 1)], "scope.targets": [({}, 2)]}
MODEL = {"namespace": "demo", "model": "m"}


def test_limits_are_the_bundles() -> None:
    assert Limits.from_thresholds(THRESHOLDS) == DEFAULT
    shared = [f.name for f in fields(Limits) if hasattr(THRESHOLDS, f.name)]
    assert {name: getattr(DEFAULT, name) for name in shared} == {name: getattr(THRESHOLDS, name) for name in shared}


def test_every_verdict_is_complete_and_linked_to_a_panel() -> None:
    dashboard = json.loads((ROOT / "dashboards/overview.json").read_text())
    ids = {p["title"]: p["id"] for p in dashboard["panels"] if p["type"] != "row"}
    assert len({v.id for v in VERDICTS}) == len(VERDICTS)
    for v in VERDICTS:
        assert v.id.split(".")[0] == v.stage and v.stage in STAGES and v.owner in OWNERS and v.fix
        assert ids[v.panel] == panels.PANEL_IDS[v.panel], v.id
        assert not v.condition or v.condition in v.queries(DEFAULT)
    assert set(panels.PANEL_IDS) == {v.panel for v in VERDICTS}


def test_the_diagnosis_row_records_every_condition() -> None:
    recorded = [r for r in recording.recordings() if r.name == "llm:diagnosis"]
    assert [dict(r.labels)["verdict"] for r in recorded] == [v.id for v in VERDICTS if v.condition]
    assert all(dict(r.labels)["stage"] == r.labels[1][1].split(".")[0] for r in recorded)


def test_the_docs_name_every_verdict_the_diagnosis_row_never_shows() -> None:
    section = " ".join((ROOT / "docs/diagnose.md").read_text().split("## On the dashboard\n")[1].split())
    never = section.split("The row never shows the others:")[1].split("(each finding")[0]
    assert re.findall(r"`([a-z_]+\.[a-z_]+)`", never) == [v.id for v in VERDICTS if not v.condition]


def test_queries_take_the_scope_and_the_job() -> None:
    scope = Scope("team-a", "llama", "30m")
    assert render_query("llm_engine_up{$NS} == 0", scope, DEFAULT.selector) == (
        'llm_engine_up{job="llm-exporter", namespace="team-a"} == 0'
    )
    assert render_query("rate(llm_preemptions_total{$NSM}[$W])", scope) == (
        'rate(llm_preemptions_total{namespace="team-a", model="llama"}[30m])'
    )
    assert render_query('llm:bottleneck{resource="x", $NSM}', Scope()) == 'llm:bottleneck{resource="x"}'
    assert render_query("llm:replica_queue_share{$NSM} > 0.8", Scope()) == "llm:replica_queue_share > 0.8"
    assert render_query("up{$NS}", Scope('a"b')) == 'up{namespace="a\\"b"}'


def test_fragmented_gives_the_arithmetic() -> None:
    free = [
        ({"node": n, "resource": "nvidia.com/gpu"}, v) for n, v in (("a", 2), ("b", 2), ("c", 1), ("d", 1), ("e", 4))
    ]
    free.append(({"node": "m", "resource": "nvidia.com/mig-1g.10gb"}, 7))
    r = readings(
        {
            "placement.fragmented.fragmented": [
                ({"namespace": "demo", "pod": "p", "resource": "nvidia.com/gpu", "reason": "fragmented"}, 4)
            ],
            "placement.fragmented.free": free,
            "placement.fragmented.unschedulable": [({"node": "e"}, 0)],
            "placement.fragmented.usable": [({"resource": "nvidia.com/gpu"}, 6)],
        }
    )
    [f] = fragmented.VERDICT.judge(r, [])
    assert f.verdict == (
        "demo/p is Pending: 4 nvidia.com/gpu on one node needed; 6 free as 2/2/1/1 on 4 node(s); "
        "not usable: e (4 free, cordoned)"
    )
    assert [e.value for e in f.evidence] == [4, 6] and f.owner == "platform" and f.namespace == "demo"


def test_queue_skew_counts_the_idle_siblings() -> None:
    pods = [({**MODEL, "pod": p}, v) for p, v in (("a", 9), ("b", 0), ("c", 0))]
    r = readings({"routing.queue_skew.share": [({**MODEL, "pod": "a"}, 1.0)], "routing.queue_skew.per_replica": pods})
    [f] = queue_skew.VERDICT.judge(r, [])
    assert (
        f.verdict
        == "demo/a holds 100 % of m's queue (9 of 9 waiting) while 2 other replica(s) have none: routing, not capacity"
    )
    assert f.evidence[0].query.startswith("llm:replica_queue_share > 0.8 and on (namespace, model)")
    assert f.evidence[0].at == AT


def test_compute_is_silent_where_an_earlier_stage_explains_the_queue() -> None:
    r = readings({"engine.compute.share": [(MODEL, 1.0)]})
    assert [f.verdict_id for f in compute.VERDICT.judge(r, [])] == ["engine.compute"]
    routing = queue_skew.VERDICT.finding("x", [], "demo", "m")
    assert compute.VERDICT.judge(r, [routing]) == []
    elsewhere = queue_skew.VERDICT.finding("x", [], "other", "m")
    assert len(compute.VERDICT.judge(r, [elsewhere])) == 1


def test_at_min_is_silent_when_the_trigger_query_is_empty() -> None:
    held = {"namespace": "demo", "workload": "w", "autoscaler": "w", "kind": "keda"}
    r = readings({"scaling.autoscaler_at_min.held": [(held, 1)]})
    assert len(autoscaler_at_min.VERDICT.judge(r, [])) == 1
    empty = {"kind": "ScaledObject", "namespace": "demo", "name": "w", "location": "spec.triggers[0]"}
    r = readings({"scaling.autoscaler_at_min.held": [(held, 1)], "scaling.autoscaler_query_empty.empty": [(empty, 1)]})
    assert autoscaler_at_min.VERDICT.judge(r, []) == []
    assert len(autoscaler_query_empty.VERDICT.judge(r, [])) == 1


def test_nobody_waiting_is_a_clean_bill_even_with_a_verdict_somewhere() -> None:
    results = {
        **ENGINES,
        "waiting.unexplained.models": [(MODEL, 1)],
        "waiting.unexplained.ttft_p99": [(MODEL, 0.4)],
        "waiting.unexplained.queue_max": [(MODEL, 1)],
        "placement.pending.pending": [({"namespace": "demo", "pod": "p", "resource": "r", "reason": "fits"}, 1)],
    }
    report = walk(readings(results), AT, "demo")
    assert (report.status, report.findings, report.exit_code) == ("healthy", (), 0)


def test_a_wait_no_stage_explains_is_reported_last_with_its_owner() -> None:
    results = {
        **ENGINES,
        "waiting.unexplained.models": [(MODEL, 1), ({"namespace": "demo", "model": "n"}, 1)],
        "waiting.unexplained.ttft_p99": [(MODEL, 4.0), ({"namespace": "demo", "model": "n"}, 3.0)],
        "waiting.unexplained.queue_share": [(MODEL, 0.1), ({"namespace": "demo", "model": "n"}, 0.9)],
        "routing.finished_skew.share": [({**MODEL, "pod": "a"}, 0.95)],
    }
    report = walk(readings(results), AT)
    assert [(f.verdict_id, f.model, f.owner) for f in report.findings] == [
        ("routing.finished_skew", "m", "platform"),
        ("waiting.unexplained", "n", "platform"),  # 90 % of its first-token time in the queue: capacity
    ]
    assert report.exit_code == 1


def test_ranking_follows_the_path_telemetry_first() -> None:
    def f(stage: str, weight: float = 0) -> Finding:
        return Finding(stage, f"{stage}.x", stage, (), "fix", "platform", "ns", "", "p", weight)

    found = [
        f("ingress"),
        f("waiting"),
        f("engine"),
        f("placement", 1),
        f("placement", 4),
        f("routing"),
        f("telemetry"),
    ]
    assert [(x.stage, x.weight) for x in rank(found)] == [
        ("telemetry", 0),
        ("routing", 0),
        ("placement", 4),
        ("placement", 1),
        ("engine", 0),
        ("ingress", 0),
        ("waiting", 0),
    ]


def test_a_telemetry_problem_is_never_a_clean_bill() -> None:
    missing = {"namespace": "demo", "pod": "p", "engine": "vllm", "metric": "llm_requests_waiting"}
    results = {**ENGINES, "telemetry.metric_missing.missing": [({**missing, "source": "s", "version": "1"}, 0)]}
    report = walk(readings(results), AT, "demo")
    assert (report.status, report.exit_code, len(report.telemetry)) == ("unknown", 2, 1)
    body = render.as_json(report)
    jsonschema.validate(body, json.loads((ROOT / "exporter/diagnose/schema.json").read_text()))
    assert body["telemetry"][0]["evidence"] == [
        {"query": 'llm_metric_present{job="llm-exporter"} == 0', "value": 0.0, "at": AT}
    ]


def test_scope_errors_name_what_is_there() -> None:
    with pytest.raises(ScopeError, match=r"namespace 'x' has no engine series .* namespaces with engines: demo"):
        walk(readings(dict(ENGINES)), AT, "x")
    with pytest.raises(ScopeError, match="the window is empty"):
        walk(readings({}), AT)


def test_the_link_opens_the_panel_with_the_window_and_scope() -> None:
    assert panels.link("https://g.example/", "Queue per replica", 1000, 2000, "demo", "m") == (
        "https://g.example/d/llm-inference-overview/?from=1000&to=2000&var-namespace=demo&var-model=m&viewPanel=13"
    )


def test_numbers_read_as_a_person_reads_them() -> None:
    assert [number(v) for v in (4, 0.97, 119.4, 3601.7, 0.01493)] == ["4", "0.97", "119", "3602", "0.0149"]
    # half-way values with a float's noise either side read the same
    assert {number(4.925 + d) for d in (-1e-12, 0, 1e-12)} == {"4.92"}


def test_the_command_is_registered() -> None:
    assert cli.TOOLS["diagnose"] == "exporter.diagnose.cli"
    args = cli.parser("diagnose").parse_args(["diagnose", "--prometheus", "http://p:9090"])
    assert (args.namespace, args.model, args.at, args.window, args.output) == ("", "", "now", "15m", "text")
    assert args.bearer_token_file is None and args.grafana_url == ""


def test_waiting_summary() -> None:
    w = waiting.Wait("demo", "m", 4.97, 0.05, 11, 0.9, ("first token",))
    assert w.summary() == (
        "demo/m: first token 4.97 s (p99), up to 11 waiting, 90 % of first-token time queueing, "
        "0.05 s between tokens (p99)"
    )
    assert isinstance(Report, type)


def test_without_a_cluster_role_the_unexplained_wait_says_what_was_not_judged() -> None:
    results = {
        **ENGINES,
        "waiting.unexplained.models": [(MODEL, 1)],
        "waiting.unexplained.ttft_p99": [(MODEL, 4.0)],
        "telemetry.cluster_view.absent": [({}, 1)],
    }
    report = walk(readings(results), AT, "demo")
    assert report.status == "findings" and report.telemetry == ()
    [f] = report.findings
    assert f.verdict == (
        "users of demo/m wait (first token) and no stage explains it: first token 4 s (p99); no cluster role "
        "reports autoscalers, pending pods or routes, so scaling and placement were not judged"
    )
    assert f.owner == "application"  # no queue share known: not shown to be capacity
