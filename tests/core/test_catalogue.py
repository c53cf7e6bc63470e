"""The catalogue is the contract: naming rules, and the generated files that come from it."""

from __future__ import annotations

import re

from exporter.bundle import docs
from exporter.catalogue import ALL, MetricType
from exporter.engines import engine_releases

UNITS = ("seconds", "bytes", "ratio", "celsius", "watts", "joules", "bytes_per_second", "")


def test_names_follow_the_prometheus_rules() -> None:
    for spec in ALL:
        assert re.fullmatch(r"llm_[a-z0-9_]+", spec.name), spec.name
        assert spec.name.endswith("_total") == (spec.type is MetricType.COUNTER), spec.name
        assert spec.unit in UNITS, spec.name
        if spec.unit and spec.type is not MetricType.COUNTER:
            assert spec.name.endswith(spec.unit) or spec.name.endswith(f"{spec.unit}_seconds"), spec.name
        # an info gauge (value 1, one series per object it describes) names the object's attributes: up to 12
        assert spec.help.strip() and len(spec.labels) < (13 if spec.name.endswith("_info") else 10), spec.name


def test_design_contract_names_exist() -> None:
    names = {spec.name for spec in ALL}
    for name in (
        "llm_requests_running llm_requests_waiting llm_kv_cache_usage_ratio llm_time_to_first_token_seconds "
        "llm_inter_token_latency_seconds llm_request_duration_seconds llm_request_queue_time_seconds "
        "llm_request_prefill_time_seconds llm_request_decode_time_seconds llm_prompt_tokens_total "
        "llm_generation_tokens_total llm_prefix_cache_queries_total llm_prefix_cache_hits_total "
        "llm_preemptions_total llm_requests_finished_total llm_engine_up llm_engine_info llm_metric_present "
        "llm_engine_unmapped_metrics llm_exporter_build_info llm_exporter_collector_success "
        "llm_exporter_collector_duration_seconds"
    ).split():
        assert name in names


def test_metric_docs_match_the_catalogue() -> None:
    assert docs.main([]) == 0, "docs/metrics.md drifted: python -m exporter.bundle.docs --write"


def test_release_table_matches_its_source() -> None:
    assert engine_releases.main([]) == 0, "run python -m exporter.engines.engine_releases --write"


def test_a_deprecated_metric_says_so_in_its_help() -> None:
    from dataclasses import replace

    from exporter.catalogue import engine
    from exporter.exposition import Family, render

    family = Family(replace(engine.ENGINE_UP, deprecated="use llm_engine_reachable instead; removed in 0.3"))
    family.add(("ns", "p", "vllm"), 1)
    assert render([family]).splitlines()[0] == (
        "# HELP llm_engine_up 1 when the last scrape of this engine target succeeded, else 0. "
        "DEPRECATED: use llm_engine_reachable instead; removed in 0.3"
    )
