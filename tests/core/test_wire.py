"""The wire format: gzip when asked, OpenMetrics 1.0 when asked, the text format by default.

The bodies come from the real engine collector re-exporting recorded vLLM releases (two versions at once) plus
the exporter's own families; the OpenMetrics output is checked by prometheus_client's OpenMetrics parser and
by a real Prometheus 3 scraping it with OpenMetrics as its only protocol, with compression on.
"""

from __future__ import annotations

import gzip
import math
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families as _parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from exporter.collect import CollectorSet
from exporter.config import Engines, Target
from exporter.engines.collector import EngineCollector
from exporter.exposition import CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE
from exporter.negotiation import accepts_gzip, wants_openmetrics
from tests.bundle.servers import prometheus, query, static_job, wait_for
from tests.core.serving import serving
from tests.engines.engine_servers import engine_server, recorded

# What Prometheus 3.16 sends with its default scrape_protocols, and with the text format only.
PROMETHEUS_3_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,"
    "application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,"
    "text/plain;version=0.0.4;q=0.2,*/*;q=0.1"
)
PROMETHEUS_TEXT_ONLY = "text/plain;version=0.0.4;q=0.2,*/*;q=0.1"


@pytest.fixture(scope="module")
def exporter_port() -> Iterator[int]:
    with ExitStack() as stack:
        old = stack.enter_context(engine_server("ok", recorded("0.27.1"), version="0.27.1"))
        new = stack.enter_context(engine_server("ok", recorded("0.32.0")))
        targets = [Target(old.url, {"namespace": "a", "pod": "old"}), Target(new.url, {"namespace": "a", "pod": "new"})]
        yield stack.enter_context(serving(CollectorSet([EngineCollector(Engines(targets=targets))])))


def fetch(port: int, accept: str | None = None, encoding: str | None = None) -> tuple[dict[str, str], bytes]:
    headers = {k: v for k, v in (("Accept", accept), ("Accept-Encoding", encoding)) if v is not None}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return {k.lower(): v for k, v in response.headers.items()}, response.read()


def parse_openmetrics(text: str) -> Iterator[Metric]:
    """prometheus_client's OpenMetrics parser (strict: raises on any violation of the format)."""
    families: Iterator[Metric] = _parse_openmetrics(text)  # type: ignore[no-untyped-call]
    return families


def series(families: Iterable[Metric]) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """(sample name, labels) of every sample, self-timing values aside."""
    return {(s.name, tuple(sorted(s.labels.items()))) for f in families for s in f.samples}


def test_text_format_by_default_and_for_a_text_only_scraper(exporter_port: int) -> None:
    for accept in (None, PROMETHEUS_TEXT_ONLY, "application/openmetrics-text;q=0,text/plain"):
        headers, body = fetch(exporter_port, accept)
        assert headers["content-type"] == CONTENT_TYPE
        assert "content-encoding" not in headers
        assert not body.endswith(b"# EOF\n")


def test_openmetrics_parses_and_carries_the_same_series_as_the_text_format(exporter_port: int) -> None:
    headers, body = fetch(exporter_port, PROMETHEUS_3_ACCEPT)
    assert headers["content-type"] == OPENMETRICS_CONTENT_TYPE
    text = body.decode()
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in parse_openmetrics(text)}
    _, plain = fetch(exporter_port)
    assert series(families.values()) == series(parse_text(plain.decode()))
    # counters: metadata without _total, samples with it; histograms keep their buckets; units declared
    assert families["llm_prompt_tokens"].type == "counter"
    assert "# TYPE llm_prompt_tokens counter\n" in text
    assert "\nllm_prompt_tokens_total{" in text
    assert families["llm_time_to_first_token_seconds"].type == "histogram"
    assert families["llm_time_to_first_token_seconds"].unit == "seconds"
    assert families["llm_kv_cache_usage_ratio"].unit == "ratio"
    pods = {s.labels["pod"] for s in families["llm_engine_up"].samples}
    assert pods == {"old", "new"}


def test_gzip_when_asked_in_both_formats(exporter_port: int) -> None:
    for accept in (None, PROMETHEUS_3_ACCEPT):
        headers, body = fetch(exporter_port, accept, "gzip")
        assert headers["content-encoding"] == "gzip"
        assert "Accept-Encoding" in headers["vary"]
        assert int(headers["content-length"]) == len(body)
        text = gzip.decompress(body).decode()
        _, plain = fetch(exporter_port, accept)
        parse = parse_openmetrics if accept else parse_text
        assert series(parse(text)) == series(parse(plain.decode()))
        assert len(body) * 4 < len(plain)  # repetitive label blocks compress well
    assert "content-encoding" not in fetch(exporter_port, None, "gzip;q=0, identity")[0]


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, False),
        ("", False),
        ("text/plain;version=0.0.4", False),
        ("application/openmetrics-text", True),
        ("application/openmetrics-text; version=1.0.0; charset=utf-8", True),
        ("application/openmetrics-text;version=0.0.1;q=0.5", True),
        ("application/openmetrics-text;version=2.0.0", False),
        ("application/openmetrics-text;q=0", False),
        ("application/openmetrics-text;q=bad", False),
        (PROMETHEUS_3_ACCEPT, True),
    ],
)
def test_accept_negotiation(accept: str | None, expected: bool) -> None:
    assert wants_openmetrics(accept) is expected


@pytest.mark.parametrize(
    ("header", "expected"),
    [(None, False), ("", False), ("gzip", True), ("deflate, gzip;q=1.0, *;q=0.5", True), ("gzip;q=0", False),
     ("identity", False), ("*", True), ("GZIP", True), ("gzip;q=x", False)],
)  # fmt: skip
def test_accept_encoding(header: str | None, expected: bool) -> None:
    assert accepts_gzip(header) is expected


def test_a_real_prometheus_scrapes_openmetrics_with_gzip(exporter_port: int, tmp_path: Path) -> None:
    target = [f"http://127.0.0.1:{exporter_port}"]
    jobs = [
        {**static_job("om", target), "scrape_protocols": ["OpenMetricsText1.0.0"], "enable_compression": True},
        {**static_job("text", target), "scrape_protocols": ["PrometheusText0.0.4"], "enable_compression": False},
    ]
    with prometheus(tmp_path / "prometheus", jobs) as url:

        def scraped() -> bool:
            return len(query(url, 'up{job=~"om|text"} == 1')) == 2 and bool(query(url, "llm_engine_up"))

        wait_for(scraped, 60, "both jobs to scrape the exporter")
        samples = {r["metric"]["job"]: float(r["value"][1]) for r in query(url, "scrape_samples_scraped")}
        assert samples["om"] == samples["text"] > 100
        by_job = {
            job: {tuple(sorted(r["metric"].items())) for r in query(url, f'{{job="{job}",__name__=~"llm_.*"}}')}
            for job in ("om", "text")
        }
        strip = {job: {tuple(kv for kv in s if kv[0] != "job") for s in found} for job, found in by_job.items()}
        assert strip["om"] == strip["text"]
        assert query(url, 'llm_prompt_tokens_total{job="om",pod="new"}')
        assert not math.isnan(float(query(url, 'sum(llm_time_to_first_token_seconds_count{job="om"})')[0]["value"][1]))
