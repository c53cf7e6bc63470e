"""Every dashboard and rule query parses (promtool) and only names catalogue metrics; the tokenizer itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from exporter.bundle import render
from exporter.catalogue import sample_names
from exporter.check.inputs import file_queries
from exporter.promql.selectors import Matcher, Selector, metric_names, selectors, substitute
from exporter.promql.tokens import PromQLSyntaxError
from tests.bundle.servers import PROMTOOL

ROOT = render.ROOT
DASHBOARDS = sorted((ROOT / "dashboards").glob("*.json"))
RULE_FILE = ROOT / "alerts/llm-exporter.rules.yaml"
COMPAT = ROOT / "alerts/vllm-compat.rules.yaml"
# the catalogue, plus the series the bundle's own recording rules define (llm:*)
RECORDED = {r["record"] for g in yaml.safe_load(RULE_FILE.read_text())["groups"] for r in g["rules"] if "record" in r}
ALLOWED = set(sample_names()) | RECORDED | {"up"}


def bundle_exprs() -> list[tuple[str, str]]:
    return [(f"{q.source} {q.where}", q.expr) for p in [*DASHBOARDS, RULE_FILE] for q in file_queries(p)]


def test_every_query_parses_with_promtool(tmp_path: Path) -> None:
    exprs = bundle_exprs() + [(f"{q.where}", q.expr) for q in file_queries(COMPAT)]
    assert len(exprs) > 40
    rules = [{"record": f"check:q{i}", "expr": expr} for i, (_, expr) in enumerate(exprs)]
    path = tmp_path / "queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "q", "rules": rules}]}))
    done = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_parse_check_catches_a_broken_query(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        yaml.safe_dump({"groups": [{"name": "q", "rules": [{"record": "x:y", "expr": "sum(rate(a[5m])"}]}]})
    )
    done = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0


@pytest.mark.parametrize(("where", "expr"), bundle_exprs(), ids=[w for w, _ in bundle_exprs()])
def test_queries_only_use_catalogue_metrics(where: str, expr: str) -> None:
    names = metric_names(expr)
    assert names, f"{where}: no metric found in {expr!r}"
    assert names <= ALLOWED, f"{where}: not in the catalogue: {sorted(names - ALLOWED)}"


def test_recorded_names_follow_the_recording_rule_convention() -> None:
    """level:metric:operations — and never a name the exporter itself exposes."""
    assert RECORDED
    for name in RECORDED:
        assert name.startswith("llm:") and name not in sample_names(), name


def test_compat_rules_record_catalogue_names_from_vllm_names() -> None:
    rules = yaml.safe_load(COMPAT.read_text())["groups"][0]["rules"]
    assert {r["record"] for r in rules} <= set(sample_names())
    for rule in rules:
        assert all(name.startswith("vllm:") for name in metric_names(rule["expr"])), rule


def test_dashboard_rates_use_rate_interval_and_quantiles_sum_buckets() -> None:
    for path in DASHBOARDS:
        raw = [t["expr"] for p in json.loads(path.read_text())["panels"] for t in p.get("targets", [])]
        for expr in raw:
            if "rate(" in expr or "increase(" in expr:
                # no fixed window: $__rate_interval, or $__range for "over the time shown" (rare events)
                assert ("[$__rate_interval]" in expr or "[$__range]" in expr) and "[5m]" not in expr, expr
            if "histogram_quantile" in expr:
                assert "sum by (le" in expr and "_bucket{" in expr, expr


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("up", [Selector("up", ())]),
        (
            'sum by (job, le) (rate(a_bucket{x="1", y=~"a|b"}[5m])) / on (job) group_left (z) b',
            [Selector("a_bucket", (Matcher("x", "=", "1"), Matcher("y", "=~", "a|b"))), Selector("b", ())],
        ),
        ('absent(up{job="e"} == 1)', [Selector("up", (Matcher("job", "=", "e"),))]),
        ('label_replace(vllm:a or vllm:b, "m", "$1", "n", "(.+)")', [Selector("vllm:a", ()), Selector("vllm:b", ())]),
        ('{__name__="c", d!="e"}[1h:1m] offset 5m # not(this)', [Selector("c", (Matcher("d", "!=", "e"),))]),
        ("topk(3, x) > bool 0.5", [Selector("x", ())]),
        ('count_values("v", q) and without (a) r', [Selector("q", ()), Selector("r", ())]),
        ('x{a="quo\\"te"}', [Selector("x", (Matcher("a", "=", 'quo"te'),))]),
    ],
)
def test_selectors(expr: str, want: list[Selector]) -> None:
    assert selectors(expr) == want


@pytest.mark.parametrize("expr", ['x{a="1"', "x{a 1}", "x ~ y"])
def test_selectors_reject_what_they_cannot_read(expr: str) -> None:
    with pytest.raises(PromQLSyntaxError):
        selectors(expr)


def test_substitute_grafana_variables() -> None:
    expr = 'rate(x{a=~"$ns", b="${model:regex}", c="[[node]]"}[$__rate_interval]) offset $__interval'
    assert substitute(expr, {"ns": "demo", "model": ".*", "node": "n1"}) == (
        'rate(x{a=~"demo", b=".*", c="n1"}[5m]) offset 1m'
    )
    assert substitute('label_replace(x, "a", "$1", "b", "(.*)")', {}) == 'label_replace(x, "a", "$1", "b", "(.*)")'
