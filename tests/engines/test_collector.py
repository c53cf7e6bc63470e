"""The engine collector against real loopback servers that misbehave: only the broken target degrades."""

from __future__ import annotations

import re
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from exporter.catalogue import engine as m
from exporter.config import Engines, Target
from exporter.demo.vllm_env import free_port
from exporter.engines.collector import MAX_WORKERS, EngineCollector
from exporter.exposition import render
from tests import golden
from tests.engines.engine_servers import engine_server, recorded

GOLDEN = Path(__file__).parent / "golden"


def scrape(*targets: tuple[str, str], timeout: float = 1.0, max_bytes: int = 8 << 20) -> tuple[str, float]:
    config = Engines(
        timeout_seconds=timeout,
        max_response_bytes=max_bytes,
        targets=[Target(url=url, labels={"namespace": "t", "pod": pod}) for url, pod in targets],
    )
    collector = EngineCollector(config)
    try:
        start = time.monotonic()
        text = render(collector.collect())
        return text, time.monotonic() - start
    finally:
        collector.close()


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("hang", "timeout"), ("drip", "timeout"), ("500", "http_status"), ("garbage", "parse"), ("huge", "too_large")],
)
def test_a_broken_target_degrades_only_its_own_series(mode: str, reason: str) -> None:
    with ExitStack() as stack:
        good = stack.enter_context(engine_server("ok", recorded("0.32.0")))
        bad = stack.enter_context(engine_server(mode, recorded("0.32.0")))
        text, took = scrape((good.url, "good"), (bad.url, "bad"), timeout=1.0, max_bytes=1 << 20)
    assert took < 1.6, "the scrape must answer within the engine timeout"
    # an `auto` target no body has identified: its engine is not guessed
    assert 'llm_engine_up{namespace="t",pod="bad",engine="unknown"} 0' in text
    assert f'llm_engine_scrape_error{{namespace="t",pod="bad",engine="unknown",reason="{reason}"}} 1' in text
    assert 'llm_engine_up{namespace="t",pod="good",engine="vllm"} 1' in text
    assert 'llm_requests_waiting{namespace="t",pod="good",engine="vllm",model="tiny",dp_rank="0"} 0' in text
    assert not re.search(r'pod="bad",engine="[^"]*",model=', text)  # no fake zeros for the broken target


def test_connection_refused() -> None:
    with engine_server("ok") as server:
        url = server.url
    text, _ = scrape((url, "gone"))
    assert 'llm_engine_scrape_error{namespace="t",pod="gone",engine="unknown",reason="connect"} 1' in text


def test_a_down_auto_target_is_engine_unknown_and_named_by_its_host_and_port() -> None:
    port = free_port()  # nothing listens there
    collector = EngineCollector(Engines(timeout_seconds=1.0, targets=[Target(url=f"http://user:pw@127.0.0.1:{port}")]))
    try:
        text = golden.exposition(render(collector.collect()))
    finally:
        collector.close()
    source = f'namespace="",pod="127.0.0.1:{port}",engine="unknown"'
    assert text == (
        f"# HELP llm_engine_up {m.ENGINE_UP.help}\n"
        "# TYPE llm_engine_up gauge\n"
        f"llm_engine_up{{{source}}} 0\n"
        f"# HELP llm_engine_scrape_duration_seconds {m.SCRAPE_DURATION.help}\n"
        "# TYPE llm_engine_scrape_duration_seconds gauge\n"
        f"llm_engine_scrape_duration_seconds{{{source}}} <varies>\n"
        f"# HELP llm_engine_scrape_error {m.SCRAPE_ERROR.help}\n"
        "# TYPE llm_engine_scrape_error gauge\n"
        f'llm_engine_scrape_error{{{source},reason="connect"}} 1\n'
    )


def test_the_engine_label_is_configured_or_identified_never_guessed() -> None:
    with engine_server("500", recorded("0.32.0")) as auto, engine_server("500") as configured:
        config = Engines(
            timeout_seconds=1.0,
            targets=[
                Target(url=auto.url, labels={"namespace": "t", "pod": "auto"}),
                Target(url=configured.url, labels={"namespace": "t", "pod": "sglang"}, engine="sglang"),
            ],
        )
        collector = EngineCollector(config)
        try:
            ups = []
            for mode in ("500", "ok", "500"):  # down since start, then answering as vLLM, then down again
                auto.mode = mode
                ups.append(re.findall(r"^llm_engine_up\{(.*)\} (\d)$", render(collector.collect()), re.M))
        finally:
            collector.close()
    assert ups == [
        [('namespace="t",pod="auto",engine="unknown"', "0"), ('namespace="t",pod="sglang",engine="sglang"', "0")],
        [('namespace="t",pod="auto",engine="vllm"', "1"), ('namespace="t",pod="sglang",engine="sglang"', "0")],
        # once identified, a failed scrape keeps the name: the series (and an LLMEngineDown on it) go on
        [('namespace="t",pod="auto",engine="vllm"', "0"), ('namespace="t",pod="sglang",engine="sglang"', "0")],
    ]


def test_exact_exposition_for_a_minimal_engine() -> None:
    body = (
        "# TYPE vllm:num_requests_waiting gauge\n"
        'vllm:num_requests_waiting{engine="0",model_name="m"} 3.0\n'
        "# TYPE vllm:brand_new_metric gauge\nvllm:brand_new_metric 1.0\n"
    )
    with engine_server("ok", body, version=None) as server:
        text, _ = scrape((server.url, "p"))
    # every family, series, help text and order, the scrape's duration masked (tests/golden.py)
    golden.check(GOLDEN / "minimal-engine.prom", golden.exposition(text))


def test_duplicate_series_nan_and_a_cardinality_explosion_are_trimmed_not_fatal() -> None:
    body = recorded("0.32.0")
    vllm_lines = "".join(line + "\n" for line in body.splitlines() if line.startswith("vllm:"))
    duplicated = body + vllm_lines  # every engine series twice: a broken multi-process registry
    nan = body.replace(
        'vllm:num_requests_waiting{engine="0",model_name="tiny"} 0.0',
        'vllm:num_requests_waiting{engine="0",model_name="tiny"} NaN',
    )
    assert nan != body
    lora = body + "".join(f'vllm:num_requests_running{{engine="0",model_name="lora-{i}"}} 1\n' for i in range(30000))
    with ExitStack() as stack:
        servers = {
            name: stack.enter_context(engine_server("ok", text))
            for name, text in (("dup", duplicated), ("nan", nan), ("lora", lora))
        }
        text, _ = scrape(*((s.url, name) for name, s in servers.items()), timeout=3.0)
    n_mapped = vllm_lines.count("\n")
    for pod in ("dup", "nan", "lora"):
        assert f'llm_engine_up{{namespace="t",pod="{pod}",engine="vllm"}} 1' in text
    dup = re.search(
        r'llm_engine_series_dropped\{namespace="t",pod="dup",engine="vllm",reason="duplicate"\} (\d+)', text
    )
    assert dup is not None and 0 < int(dup.group(1)) <= n_mapped
    assert 'llm_requests_waiting{namespace="t",pod="nan",engine="vllm",model="tiny",dp_rank="0"} NaN' in text
    assert 'llm_engine_series_dropped{namespace="t",pod="lora",engine="vllm",reason="series_limit"} ' in text
    lora_dropped = re.search(r'pod="lora",engine="vllm",reason="series_limit"\} (\d+)', text)
    assert lora_dropped is not None and int(lora_dropped.group(1)) > 10000  # over the default 20,000 cap
    assert text.count('llm_requests_running{namespace="t",pod="lora"') <= 20000
    assert 'pod="dup",engine="vllm",reason="series_limit"} 0' in text


def test_more_hanging_targets_than_workers_keep_the_scrape_within_its_deadline() -> None:
    with engine_server("hang") as hang, engine_server("ok", recorded("0.32.0")) as ok:
        targets = [
            Target(url=f"{hang.url}/m{i}", labels={"namespace": "t", "pod": f"h{i}"}) for i in range(MAX_WORKERS + 8)
        ]
        config = Engines(
            timeout_seconds=0.5, targets=[*targets, Target(url=ok.url, labels={"namespace": "t", "pod": "ok"})]
        )
        collector = EngineCollector(config)
        try:
            took = []
            for _ in range(3):  # a scrape's queued fetches never run into the next one
                start = time.monotonic()
                text = render(collector.collect())
                took.append(time.monotonic() - start)
                assert text.count('reason="timeout"} 1') >= MAX_WORKERS + 8
            time.sleep(0.6)
            fetched = hang.metrics_requests
        finally:
            collector.close()
            hang.stopping.set()
    assert max(took) < 0.5 + 0.25 + 0.3, took
    # fetches queued past the deadline are never started: no more than the workers at once, per scrape
    assert fetched <= 3 * MAX_WORKERS, fetched
