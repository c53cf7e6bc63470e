"""The watchdog's evaluation on autoscalers and dashboards written outside this project (tests/fixtures/
check_corpus, stored as found), against a real Prometheus 3 scraping a recorded vLLM 0.32.0 body.

vLLM's own current dashboard, loaded the way the Grafana sidecar loads it (a labelled ConfigMap), has a query
variable `model_name`: resolved from Prometheus as Grafana does, none of its 27 queries is a false alarm. An
autoscaler written for vLLM's old KV-cache name is empty, and the release history names the successor.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from exporter.sources.prometheus import HttpPrometheus
from exporter.watchdog import model
from exporter.watchdog.adapter import Evaluator, Outcome, keda_query
from tests.bundle.servers import Served, prometheus, query, static_job, wait_for
from tests.engines.engine_servers import recorded

CORPUS = Path(__file__).resolve().parents[1] / "fixtures/check_corpus"


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
