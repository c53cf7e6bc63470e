"""diagnose on a store of many clusters, the pure parts: every planned query scoped to the one cluster, each
finding naming it in JSON (the schema's `cluster`), text, Markdown and the panel link, a scope error naming
it, and a partial response explained as what it is. tests/bundle/test_thanos_diagnose.py runs it on Thanos."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from exporter import cli
from exporter.check.scope import Cluster
from exporter.diagnose import render
from exporter.diagnose.cli import explain
from exporter.diagnose.collect import queries as planned
from exporter.diagnose.limits import DEFAULT
from exporter.diagnose.model import Readings, Sample
from exporter.diagnose.promql import Scope
from exporter.diagnose.walk import ScopeError, walk
from exporter.promql.cluster import only
from exporter.sources.prometheus import PartialResponseError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "exporter/diagnose/schema.json").read_text())
AT = "2026-01-31T14:15:00Z"
EAST = Cluster("region", "east")
# a selector of a metric the walk reads, and one without braces
_SELECTOR = re.compile(r"\b(?:llm_[a-z0-9_]+|llm:[a-z0-9_:]+|up|ALERTS)\{([^}]*)\}")
_BARE = re.compile(r"\b(?:llm_[a-z0-9_]+|llm:[a-z0-9_:]+)\b(?![{:_a-z0-9])")


def readings(results: dict[str, Any], cluster: Cluster | None = EAST) -> Readings:
    texts = {qid: expr for _, qid, expr in planned(Scope("demo", "", "15m", cluster))}
    samples = {qid: tuple(Sample(labels, value) for labels, value in rows) for qid, rows in results.items()}
    return Readings(AT, "15m", texts, samples, DEFAULT, "", cluster)


MODEL = {"namespace": "demo", "model": "m"}
WAITING: dict[str, Any] = {
    "scope.namespaces": [({"namespace": "demo", "region": "east"}, 1)],
    "scope.targets": [({"region": "east"}, 2)],
    "waiting.unexplained.models": [(MODEL, 1)],
    "waiting.unexplained.ttft_p99": [(MODEL, 4.0)],
    "waiting.unexplained.queue_share": [(MODEL, 0.9)],
}


def test_every_query_of_the_walk_is_scoped_to_the_cluster() -> None:
    plain = planned(Scope("demo", "m", "15m"))
    scoped = planned(Scope("demo", "m", "15m", EAST))
    assert [(s, q) for s, q, _ in scoped] == [(s, q) for s, q, _ in plain] and len(plain) > 40
    for (_, qid, one), (_, _, many) in zip(plain, scoped, strict=True):
        # the rewrite `check` and the watchdog use: the matcher on every selector, the label in every `by`
        assert many == only(one, "region", "east"), qid
        selectors = _SELECTOR.findall(many)
        assert selectors and all('region="east"' in s for s in selectors), (qid, many)
        assert not _BARE.search(many), (qid, many)  # no selector left without braces
        assert 'region="east"' not in one
    # e.g. the count of exporter targets, kept per cluster
    targets = dict((q, e) for _, q, e in scoped)["scope.targets"]
    assert targets == 'count by (region) (last_over_time(up{region="east", job="llm-exporter"}[15m]))'


def test_each_finding_names_its_cluster_in_json_text_markdown_and_the_link() -> None:
    report = walk(readings(WAITING), AT, "demo")
    assert report.status == "findings" and report.cluster == EAST
    [finding] = report.findings
    assert finding.cluster == "east"
    body = render.as_json(report, "https://g.example")
    jsonschema.validate(body, SCHEMA)
    [item] = body["findings"]
    assert item["cluster"] == "east"
    assert "var-cluster=east" in item["panel"] and "var-namespace=demo" in item["panel"]
    assert all('region="east"' in e["query"] for e in item["evidence"])
    text = render.text(report)
    assert text.startswith("llm-exporter diagnose: 1 finding (region east, namespace demo, 15m up to ")
    assert "\n   region: east\n" in text
    markdown = render.markdown(report)
    assert "(region east, namespace demo, 15m up to " in markdown.splitlines()[0]
    assert "\n- Region: east\n" in markdown


def test_without_a_cluster_the_report_is_a_single_clusters() -> None:
    report = walk(readings(WAITING, cluster=None), AT, "demo")
    [finding] = report.findings
    body = render.as_json(report, "https://g.example")
    jsonschema.validate(body, SCHEMA)
    assert body["findings"][0]["cluster"] == "" and "var-cluster" not in body["findings"][0]["panel"]
    assert finding.cluster == "" and "region" not in render.text(report) + render.markdown(report)


def test_the_schema_requires_the_cluster_of_each_finding() -> None:
    body = render.as_json(walk(readings(WAITING), AT, "demo"))
    del body["findings"][0]["cluster"]
    with pytest.raises(jsonschema.ValidationError, match="'cluster' is a required property"):
        jsonschema.validate(body, SCHEMA)


def test_a_cluster_without_engine_series_is_named() -> None:
    with pytest.raises(ScopeError, match=r'no engine series \(llm_engine_info\) with region="east" in the 15m'):
        walk(readings({}), AT)
    with pytest.raises(ScopeError, match=r'namespace \'x\' has no engine series .* with region="east"'):
        walk(readings(WAITING), AT, "x")


def test_a_partial_response_is_explained_as_what_is_missing() -> None:
    error = PartialResponseError(
        "partial response: no answer from 127.0.0.1:10901: receive series from Addr: 127.0.0.1:10901", "127.0.0.1:10901"
    )
    message = explain(error, "http://thanos:9090")
    assert message.startswith("http://thanos:9090: partial response: no answer from 127.0.0.1:10901")
    assert message.endswith("the series that store holds would be missing from every verdict: nothing judged")


def test_the_cluster_flags() -> None:
    args = cli.parser("diagnose").parse_args(["diagnose", "--prometheus", "http://p:9090"])
    assert (args.cluster, args.cluster_label, args.replica_label) == ("", "cluster", [])
    argv = ["diagnose", "--prometheus", "http://p:9090", "--cluster", "a", "--cluster-label", "region"]
    args = cli.parser("diagnose").parse_args([*argv, "--replica-label", "replica", "--replica-label", "prom"])
    assert (args.cluster, args.cluster_label, args.replica_label) == ("a", "region", ["replica", "prom"])
    with pytest.raises(SystemExit):
        cli.parser("diagnose").parse_args([*argv[:3], "--cluster-label", "__name__"])
