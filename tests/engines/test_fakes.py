"""Detection and version queries against fakes that serve exactly what each engine serves, with no engine hint."""

from __future__ import annotations

import re

import pytest

from exporter.config import Engines, Target
from exporter.engines.collector import EngineCollector
from exporter.exposition import render
from tests.engines.engine_bodies import GENERATED
from tests.engines.engine_fakes import fake_engine, routes


def scrape(url: str, engine: str = "auto") -> str:
    collector = EngineCollector(
        Engines(timeout_seconds=5, targets=[Target(url, {"namespace": "t", "pod": "p"}, engine)])
    )
    try:
        return render(collector.collect())
    finally:
        collector.close()


def info(text: str) -> tuple[str, str, str]:
    found = re.search(
        r'llm_engine_info\{namespace="t",pod="p",engine="([^"]*)",version="([^"]*)",version_source="([^"]*)"', text
    )
    assert found is not None, text[-2000:]
    return found.group(1), found.group(2), found.group(3)


FOUND = [
    ("sglang", "0.5.23", "0.5.23", ("sglang", "0.5.23", "endpoint")),
    ("sglang", "0.4.3.post2", "0.4.3.post2", ("sglang", "0.4.3.post2", "endpoint")),
    ("tgi", "3.3.7", "3.3.7", ("tgi", "3.3.7", "endpoint")),
    ("trtllm", "1.4.0rc1", "1.4.0rc1", ("trtllm", "1.4.0rc1", "endpoint")),
    ("trtllm", "1.1.0", "1.1.0", ("trtllm", "1.1.0", "endpoint")),  # unprefixed: found by its metrics path
    ("llamacpp", "0c1e57098", "b0-unknown", ("llamacpp", "0c1e57098", "inferred")),  # sdist builds say b0
    ("llamacpp", "7841fc723", "b0-unknown", ("llamacpp", "7841fc723", "inferred")),
    # a release build says its build number: reported as said, placed in the table by that number
    ("llamacpp", "0c1e57098", "b11434-9f4a0c2", ("llamacpp", "b11434", "endpoint")),
    ("llamacpp", "e3546c794", "b9976-e3546c7", ("llamacpp", "b9976", "endpoint")),
    ("lmdeploy", "0.16.0", None, ("lmdeploy", "0.18.0", "inferred")),  # no version endpoint: 0.16-0.18 alike
]


def test_every_generated_engine_is_found_by_a_fake() -> None:
    """A registered engine without a fake (engine_fakes.routes) and a case here is never detected end to end."""
    assert {engine for engine, *_ in FOUND} == set(GENERATED)


@pytest.mark.parametrize(("engine", "version", "answered", "expected"), FOUND)
def test_engine_and_version_found_without_configuration(
    engine: str, version: str, answered: str | None, expected: tuple[str, str, str]
) -> None:
    with fake_engine(routes(engine, version, answered)) as server:
        text = scrape(server.url)
    assert info(text) == expected
    assert f'llm_engine_up{{namespace="t",pod="p",engine="{engine}"}} 1' in text
    assert not re.search(r"^llm_metric_present\{.*\} 0$", text, re.M)
    assert "/version" not in server.requested or engine == "trtllm"  # nothing vLLM-shaped asked of others


def test_trtllm_configured_goes_straight_to_prometheus_metrics() -> None:
    with fake_engine(routes("trtllm", "1.4.0rc1", "1.4.0rc1")) as server:
        text = scrape(server.url, "trtllm")
    assert info(text) == ("trtllm", "1.4.0rc1", "endpoint")
    assert "/metrics" not in server.requested


def test_llamacpp_without_metrics_flag_says_so() -> None:
    with fake_engine(routes("llamacpp", "0c1e57098", "b0-unknown", metrics_enabled=False)) as server:
        text = scrape(server.url, "llamacpp")
    assert 'llm_engine_scrape_error{namespace="t",pod="p",engine="llamacpp",reason="metrics_disabled"} 1' in text
    assert 'llm_engine_up{namespace="t",pod="p",engine="llamacpp"} 0' in text


def test_the_engine_key_overrides_detection() -> None:
    with fake_engine(routes("sglang", "0.5.23", "0.5.23")) as server:
        text = scrape(server.url, "sglang")
    assert info(text) == ("sglang", "0.5.23", "endpoint")
