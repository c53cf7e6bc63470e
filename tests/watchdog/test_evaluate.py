"""The watchdog's evaluation on autoscalers and dashboards written outside this project (tests/fixtures/
check_corpus, stored as found), against a real Prometheus 3 scraping a recorded vLLM 0.32.0 body.

vLLM's own current dashboard, loaded the way the Grafana sidecar loads it (a labelled ConfigMap), has a query
variable `model_name`: resolved from Prometheus as Grafana does, none of its 27 queries is a false alarm. An
autoscaler written for vLLM's old KV-cache name is empty, and the release history names the successor.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from exporter import logs
from exporter.exposition import render
from exporter.sources.prometheus import HttpPrometheus
from exporter.watchdog import model
from exporter.watchdog.adapter import Evaluator, Outcome, keda_query
from exporter.watchdog.collector import WatchdogCollector
from tests.bundle.servers import Served, prometheus, query, static_job, wait_for
from tests.engines.engine_servers import recorded

CORPUS = Path(__file__).resolve().parents[1] / "fixtures/check_corpus"
FORMATS = Path(__file__).resolve().parents[1] / "fixtures/check_formats"
OLD_KV_QUERY = 'avg(vllm:gpu_cache_usage_perc{model_name="tiny"})'  # an autoscaler written for vLLM before 0.12


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    body = recorded("0.32.0")
    engine = Served(lambda path: (200, body) if path == "/metrics" else (404, ""))
    try:
        with prometheus(tmp_path_factory.mktemp("prom"), [static_job("vllm", [engine.url])]) as url:
            wait_for(lambda: bool(query(url, "count_over_time(vllm:num_requests_waiting[1m]) > 2")), 30, "scrapes")
            yield url
    finally:
        engine.close()


def test_vllm_current_dashboard_in_a_sidecar_configmap_has_no_false_alarm(prom: str) -> None:
    text = (CORPUS / "production-stack-vllm-model-metrics-dashboard.json").read_text(encoding="utf-8")
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "vllm-dashboard", "namespace": "monitoring", "labels": {"grafana_dashboard": "1"}},
        "data": {"vllm.json": text},
    }
    (kept,) = model.dashboards(configmap) or ()
    evaluator = Evaluator(HttpPrometheus(prom))
    queries = model.expand(kept, evaluator.dashboard(kept.dashboard or ""))
    assert len(queries) == 27
    assert all("$model_name" in w.expr for w, _ in queries), "the location's expr is the query as written"
    assert all('model_name="tiny"' in q.expr for _, q in queries), "label_values(model_name) from Prometheus"
    outcomes = {w.location: evaluator.evaluate(q) for w, q in queries}
    assert {where: o.reasons for where, o in outcomes.items() if o.status != "data"} == {}


def test_the_production_stack_scaled_object_has_data(prom: str) -> None:
    obj = yaml.safe_load((CORPUS / "production-stack-keda-scaled-object.yaml").read_text(encoding="utf-8"))
    (watched,) = model.scaler_queries("ScaledObject")(obj) or ()
    assert (watched.namespace, watched.name, watched.location) == ("default", "vllm-scaledobject", "trigger 0")
    assert Evaluator(HttpPrometheus(prom)).evaluate(keda_query(watched.expr)) == Outcome("data")


def test_an_autoscaler_on_the_old_kv_cache_name_is_renamed_with_its_successor(prom: str) -> None:
    outcome = Evaluator(HttpPrometheus(prom)).evaluate(keda_query('avg(vllm:gpu_cache_usage_perc{model_name="tiny"})'))
    assert outcome.status == "empty"
    assert outcome.fix == 'avg(vllm:kv_cache_usage_perc{model_name="tiny"})'
    assert model.empty_reason(outcome.reasons, outcome.fix is not None) == "renamed"
    (reason,) = outcome.reasons
    assert "vllm:gpu_cache_usage_perc was removed in vLLM 0.12.0" in reason
    # no llm_engine_info in this Prometheus: the release is inferred from the names vLLM serves
    assert "the running vLLM is 0.12.0 to " in reason and reason.endswith("(inferred from its series)")


@pytest.mark.parametrize(
    ("expr", "said"),
    [
        ("sum(vllm:num_requests_waiting", "unclosed"),  # caught before Prometheus is asked
        ("rate(vllm:num_requests_waiting)", "range vector"),  # Prometheus' own 400
    ],
)
def test_a_broken_query_is_a_bad_query_not_an_empty_one(prom: str, expr: str, said: str) -> None:
    outcome = Evaluator(HttpPrometheus(prom)).evaluate(keda_query(expr))
    assert outcome.status == "error"
    assert model.error_reason(outcome.http_status, "; ".join(outcome.reasons)) == "bad_query"
    assert said in "; ".join(outcome.reasons).lower()


class _Store:
    """What a reflector holds once its watch has listed the objects: their transforms, by key."""

    def __init__(self, items: dict[str, model.Watched]) -> None:
        self._items = items

    def items(self) -> dict[str, model.Watched]:
        return self._items

    def synced(self) -> bool:
        return True

    def available(self) -> bool:
        return True


def _store(transform: Callable[[dict[str, Any]], model.Watched | None], *objects: dict[str, Any]) -> _Store:
    return _Store({f"{o['metadata']['namespace']}/{o['metadata']['name']}": transform(o) or () for o in objects})


def test_one_old_dashboard_with_many_stale_panels_leaves_the_scaled_objects_diagnosis_in_the_log(prom: str) -> None:
    """The EKS tutorial's V0-era dashboard (stale panels by the dozen on 0.32) and a ScaledObject on the old
    KV-cache name, through the exporter's own rate-limited log handler: the ScaledObject is checked and logged
    first, the dashboard spends only its own lines, and the successor is a series the alert copies."""
    text = (CORPUS / "production-stack-eks-vllm-dashboard.json").read_text(encoding="utf-8")
    configmap = {"metadata": {"name": "vllm-old", "namespace": "monitoring"}, "data": {"vllm.json": text}}
    scaled = {
        "metadata": {"name": "vllm", "namespace": "llm"},
        "spec": {"triggers": [{"type": "prometheus", "metadata": {"query": OLD_KV_QUERY, "threshold": "0.8"}}]},
    }
    reflectors = {
        "configmaps": _store(model.dashboards, configmap),
        "scaledobjects": _store(model.scaler_queries("ScaledObject"), scaled),
    }
    collector = WatchdogCollector(cast(Any, reflectors), lambda: HttpPrometheus(prom), 60.0, 2000)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.LogfmtFormatter())
    handler.addFilter(logs.RateLimit())  # as `serve` configures it: 5 lines a minute
    watchdog_log = logging.getLogger("exporter.watchdog.collector")
    watchdog_log.addHandler(handler)
    try:
        collector.run_once()
    finally:
        watchdog_log.removeHandler(handler)
    lines = [line for line in stream.getvalue().splitlines() if "returns nothing" in line]
    assert "ScaledObject llm/vllm trigger 0" in lines[0], "the query that pages is logged first"
    assert "vllm:gpu_cache_usage_perc was removed in vLLM 0.12.0" in lines[0]
    assert 'fix: avg(vllm:kv_cache_usage_perc{model_name=\\"tiny\\"})' in lines[0]
    exposition = render(collector.collect()).splitlines()
    stale = [x for x in exposition if x.startswith('llm_query_empty{kind="Dashboard"') and x.endswith(" 1")]
    assert len(stale) > logs.BURST, "enough stale panels to spend a per-template limit"
    assert len([x for x in lines if "Dashboard monitoring/vllm-old" in x]) == logs.BURST
    assert (
        'llm_query_successor_info{kind="ScaledObject",namespace="llm",name="vllm",location="trigger 0",'
        'renamed="vllm:gpu_cache_usage_perc",successor="vllm:kv_cache_usage_perc",'
        'fix="avg(vllm:kv_cache_usage_perc{model_name=\\"tiny\\"})"} 1'
    ) in exposition


def test_the_loki_panels_of_a_dashboard_are_not_watched(prom: str) -> None:
    text = (FORMATS / "loki-logs-dashboard.json").read_text(encoding="utf-8")
    found = Evaluator(HttpPrometheus(prom)).dashboard(text)
    assert [where for where, _, _ in found] == [
        f"panel {title!r} query A"
        for title in ("goroutines", "gc duration", "cpu", "working set", "tx", "rx", "restarts", "bad words")
    ]
