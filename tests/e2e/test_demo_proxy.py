"""The demo's served rename: the proxy passes the engine's responses through, and renames whole metric names
in /metrics once asked (recorded vLLM 0.32.0 body as the engine)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from exporter.demo.live import engines_found, rename_signals
from exporter.demo.proxy import RenamingProxy, renamed
from exporter.engines import vllm
from exporter.engines.mapping import map_body
from exporter.engines.releases import load
from tests.bundle.servers import Served

BODY = (Path(__file__).resolve().parents[1] / "fixtures/vllm/0.32.0.prom").read_text()
RENAME = {"vllm:kv_cache_usage_perc": "vllm:kv_cache_usage_fraction"}


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def test_renamed_replaces_whole_names_in_samples_help_and_type() -> None:
    out = renamed(BODY + "vllm:kv_cache_usage_perc_other 1\n", RENAME)
    assert "# HELP vllm:kv_cache_usage_fraction " in out
    assert "# TYPE vllm:kv_cache_usage_fraction gauge" in out
    assert 'vllm:kv_cache_usage_fraction{engine="0",model_name="tiny"}' in out
    assert "vllm:kv_cache_usage_perc_other 1" in out  # a longer name is another metric
    assert out.count("vllm:kv_cache_usage_perc") == 1
    assert renamed(BODY, {}) == BODY


def test_proxy_serves_the_engine_then_the_renamed_body() -> None:
    engine = Served(lambda path: (200, BODY) if path == "/metrics" else (200, json.dumps({"version": "0.32.0"})))
    proxy = RenamingProxy(engine.url)
    try:
        assert get(proxy.url + "/metrics") == BODY
        assert json.loads(get(proxy.url + "/version")) == {"version": "0.32.0"}
        proxy.rename(RENAME)
        served = get(proxy.url + "/metrics")
        assert served == renamed(BODY, RENAME) != BODY
        result = map_body(
            served, {"namespace": "demo", "pod": "vllm-0", "engine": "vllm"}, "0.32.0", load("vllm"), engine=vllm.SPEC
        )
        assert [(s.name, src) for s, (src, found) in result.present.items() if not found] == [
            ("llm_kv_cache_usage_ratio", "vllm:kv_cache_usage_perc")
        ]
        assert result.unmapped == 1
    finally:
        proxy.close()
        engine.close()


def test_proxy_reports_an_unreachable_engine_as_502() -> None:
    engine = Served()
    proxy = RenamingProxy(engine.url)
    engine.close()
    try:
        urllib.request.urlopen(proxy.url + "/metrics", timeout=5)
        raise AssertionError("expected HTTP 502")
    except urllib.error.HTTPError as exc:
        assert exc.code == 502
    finally:
        proxy.close()


def test_rename_signals_read_the_exporters_output() -> None:
    text = (
        'llm_metric_present{namespace="demo",pod="vllm-0",engine="vllm",metric="llm_kv_cache_usage_ratio",'
        'source="vllm:kv_cache_usage_perc",version="0.32.0"} 0\n'
        'llm_metric_present{namespace="demo",pod="vllm-0",engine="vllm",metric="llm_requests_running",'
        'source="vllm:num_requests_running",version="0.32.0"} 1\n'
        'llm_engine_unmapped_metrics{namespace="demo",pod="vllm-0",engine="vllm"} 1\n'
    )
    assert rename_signals(text) == ([("llm_kv_cache_usage_ratio", "vllm:kv_cache_usage_perc")], 1.0)


def test_engines_found_reads_the_exporters_engine_info() -> None:
    text = (
        'llm_engine_info{namespace="demo",pod="vllm-0",engine="vllm",version="0.32.0",version_source="endpoint"} 1\n'
        'llm_engine_info{namespace="demo",pod="ls-0",engine="llamacpp",version="b11434",version_source="inferred"} 1\n'
    )
    assert engines_found(text) == [
        "llamacpp b11434 (inferred from its metric names)",
        "vllm 0.32.0 (asked from the engine)",
    ]
