"""Grafana variable resolution and interpolation against Grafana's documented rules.

Formats: the "Advanced variable format options" examples (servers = test1., test2). Syntax: "Variable syntax"
($var, ${var}, ${var:format}, [[var]]). Prometheus data source: multi-value and All values are regex-escaped
and joined as (a|b); a single-value variable goes in as written. Global variables: $__interval,
$__rate_interval, $__range. Query variables are answered by a real Prometheus in test_check/test_corpus;
here by a recording of what Prometheus answered, so the resolution order is what is under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exporter.check.inputs import file_queries
from exporter.check.variables import Value, format_value, interpolate, parse, resolve, run_variable_query

SERVERS = Value(("test1.", "test2"), multi=True)


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("csv", "test1.,test2"),
        ("doublequote", '"test1.","test2"'),
        ("singlequote", "'test1.','test2'"),
        ("sqlstring", "'test1.','test2'"),
        ("glob", "{test1.,test2}"),
        ("json", '["test1.","test2"]'),
        ("lucene", '("test1." OR "test2")'),
        ("percentencode", "%7Btest1.%2Ctest2%7D"),
        ("pipe", "test1.|test2"),
        ("regex", r"(test1\.|test2)"),
        ("text", "test1. + test2"),
        ("queryparam", "var-servers=test1.&var-servers=test2"),
    ],
)
def test_documented_formats(fmt: str, expected: str) -> None:
    assert interpolate(f"${{servers:{fmt}}}", {"servers": SERVERS}) == expected


def test_every_syntax_names_the_same_variable() -> None:
    values = {"job": Value(("api",))}
    assert interpolate('up{job="$job"} up{job="${job}"} up{job="[[job]]"}', values) == (
        'up{job="api"} up{job="api"} up{job="api"}'
    )
    assert interpolate("${job:csv} [[job:csv]]", values) == "api api"


def test_prometheus_default_format() -> None:
    # single value, not multi: as written (quotes escaped for the PromQL string)
    assert format_value(Value(("a.b",))) == "a.b"
    # multi-value: regex-escaped (backslashes doubled inside the PromQL string), joined as a group
    assert format_value(Value(("a.b", "c"), multi=True)) == r"(a\\.b|c)"
    assert format_value(Value(("a.b",), multi=True)) == r"a\\.b"
    # All with a custom all value: the all value, unescaped
    assert format_value(Value(("x",), multi=True, include_all=True, all_value=".*")) == ".*"


def test_builtins_and_unknown_names() -> None:
    expr = (
        "rate(x[$__rate_interval]) + increase(y[$__range]) + z[$__interval] + label_replace(w, 'a', '$1', 'b', '(.*)')"
    )
    assert interpolate(expr, {}) == ("rate(x[5m]) + increase(y[1h]) + z[1m] + label_replace(w, 'a', '$1', 'b', '(.*)')")


class Recorded:
    """What a Prometheus answered to the variable queries (label values and instant queries)."""

    def __init__(self, labels: dict[str, list[str]], queries: dict[str, list[dict[str, Any]]]) -> None:
        self.labels, self.queries, self.asked = labels, queries, []  # type: ignore[var-annotated]

    def label_values(self, label: str) -> list[str]:
        self.asked.append(label)
        return self.labels.get(label, [])

    def query(self, expr: str) -> list[dict[str, Any]]:
        self.asked.append(expr)
        return self.queries.get(expr, [])


def board(*variables: dict[str, Any]) -> dict[str, Any]:
    return {"templating": {"list": list(variables)}}


def test_query_variable_takes_the_first_value_when_the_saved_one_is_gone() -> None:
    # the saved model (a model nobody serves now) is not among the options: Grafana picks the first
    var = {
        "name": "model_name",
        "type": "query",
        "query": {"query": "label_values(model_name)", "refId": "StandardVariableQuery"},
        "current": {"text": "llama-3.1-8b", "value": "llama-3.1-8b"},
    }
    got = resolve(parse(board(var)), Recorded({"model_name": ["tiny", "zeta"]}, {}))
    assert got.values["model_name"] == Value(("tiny",))
    assert interpolate('x{model_name="$model_name"}', got.values) == 'x{model_name="tiny"}'


def test_chained_variables_and_all() -> None:
    namespace = {"name": "ns", "type": "query", "definition": "label_values(ns)", "current": {"value": "prod"}}
    pod = {
        "name": "pod",
        "type": "query",
        "query": 'label_values(up{ns="$ns"}, pod)',
        "includeAll": True,
        "multi": True,
        "current": {"text": "All", "value": ["$__all"]},
        "regex": "/vllm-(?<value>.*)/",
    }
    prom = Recorded(
        {"ns": ["dev", "prod"]},
        {'group by (pod) (up{ns="prod"})': [{"metric": {"pod": "vllm-0"}}, {"metric": {"pod": "vllm-1"}}]},
    )
    got = resolve(parse(board(namespace, pod)), prom)
    assert got.values["ns"] == Value(("prod",))
    assert interpolate('up{pod=~"$pod"}', got.values) == 'up{pod=~"(0|1)"}'


def test_custom_constant_interval_textbox_datasource() -> None:
    got = resolve(
        parse(
            board(
                {"name": "q", "type": "custom", "query": "0.5,0.9 , 0.99", "current": {"value": "0.9"}},
                {"name": "kv", "type": "custom", "query": "low : 0.1,high : 0.9"},
                {"name": "c", "type": "constant", "query": "vllm"},
                {"name": "i", "type": "interval", "query": "1m,5m", "current": {"value": "5m"}},
                {"name": "a", "type": "interval", "query": "1m,5m", "current": {"value": "$__auto_interval_a"}},
                {"name": "t", "type": "textbox", "query": "default", "current": {"value": "default"}},
                {"name": "ds", "type": "datasource", "query": "prometheus", "current": {"value": "prom"}},
            )
        )
    )
    assert interpolate("$q $kv $c $i $a $t", got.values) == "0.9 0.1 vllm 5m 1m default"


def test_override_wins_and_variable_query_kinds() -> None:
    var = {"name": "m", "type": "query", "query": "label_values(model_name)"}
    assert resolve(parse(board(var)), Recorded({}, {}), {"m": "tiny"}).values["m"] == Value(("tiny",))
    prom = Recorded(
        {"__name__": ["vllm:a", "up"]}, {"up": [{"metric": {"__name__": "up", "job": "x"}, "value": [1, "1"]}]}
    )
    assert run_variable_query("metrics(vllm:.*)", prom) == ["vllm:a"]
    assert run_variable_query("query_result(up)", prom) == ['up{job="x"} 1 1000']


def test_a_variable_that_resolves_to_nothing_is_reported() -> None:
    got = resolve(parse(board({"name": "m", "type": "query", "query": "label_values(model_name)"})), Recorded({}, {}))
    assert got.problems == ["variable m: 'label_values(model_name)' returns no values"]


def test_a_repeated_panel_is_one_query_per_value(tmp_path: Path) -> None:
    # Grafana draws a panel with `repeat: var` once per selected value, each with the single value
    var = {
        "name": "model",
        "type": "custom",
        "query": "a,b",
        "multi": True,
        "includeAll": True,
        "current": {"value": ["$__all"]},
    }
    panel = {"title": "p", "repeat": "model", "targets": [{"refId": "A", "expr": 'x{model_name="$model"}'}]}
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"templating": {"list": [var]}, "panels": [panel]}))
    assert [(q.where, q.expr) for q in file_queries(path)] == [
        ("panel 'p' query A (model=a)", 'x{model_name="a"}'),
        ("panel 'p' query A (model=b)", 'x{model_name="b"}'),
    ]


def test_without_prometheus_a_query_variable_keeps_its_saved_value_or_matches_anything() -> None:
    saved = {"name": "ns", "type": "query", "query": "label_values(ns)", "current": {"value": "prod"}}
    unsaved = {"name": "pod", "type": "query", "query": "label_values(pod)", "includeAll": True, "multi": True}
    got = resolve(parse(board(saved, unsaved)))
    assert interpolate('x{ns="$ns", pod=~"$pod"}', got.values) == 'x{ns="prod", pod=~".*"}'
