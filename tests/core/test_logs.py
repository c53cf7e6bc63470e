"""Log lines: structured, rate-limited, and free of bodies and credentials."""

from __future__ import annotations

import io
import json
import logging
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from exporter import logs
from exporter.collect import CollectorSet
from exporter.config import Engines, Target
from exporter.engines.collector import EngineCollector
from exporter.exposition import render
from tests.core.serving import serving
from tests.engines.engine_servers import engine_server


def record(msg: str, *args: object, level: int = logging.WARNING, lineno: int = 7) -> logging.LogRecord:
    rec = logging.LogRecord("exporter.test", level, __file__, lineno, msg, args, None)
    rec.created = 1796228450.123  # 2026-12-02T16:20:50.123Z
    rec.msecs = 123
    return rec


def test_logfmt_quotes_and_escapes_so_no_peer_can_forge_a_line() -> None:
    line = logs.LogfmtFormatter().format(record("engine %s said %s", "10.0.0.1", 'bad "x"\nlevel=error msg=forged'))
    assert line == (
        "ts=2026-12-02T16:20:50.123Z level=warn logger=exporter.test "
        'msg="engine 10.0.0.1 said bad \\"x\\"\\nlevel=error msg=forged"'
    )
    assert "\n" not in line


def test_json_format() -> None:
    line = logs.JsonFormatter().format(record("scrape took %.1f ms", 3.25, level=logging.INFO))
    assert json.loads(line) == {
        "ts": "2026-12-02T16:20:50.123Z",
        "level": "info",
        "logger": "exporter.test",
        "msg": "scrape took 3.2 ms",
    }


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("GET http://bob:s3cr3t@10.0.0.1:8000/metrics: connect", "GET http://***@10.0.0.1:8000/metrics: connect"),
        ("header Authorization: Basic YWxpY2U6aHVudGVyMg==", "header Authorization: Basic ***"),
        ('{"authorization": "Bearer eyJhbGciOi.x.y"}', '{"authorization": "Bearer ***"}'),
        ("/metrics?token=abc123&x=1", "/metrics?token=***&x=1"),
    ],
)
def test_credentials_are_masked(text: str, masked: str) -> None:
    assert logs.redact(text) == masked


def test_rate_limit_lets_a_burst_through_then_counts_what_it_drops() -> None:
    now = [0.0]
    limit = logs.RateLimit(clock=lambda: now[0])
    before = warn_suppressed()
    passed = [limit.filter(record("engine %s down", f"pod-{i}")) for i in range(20)]
    assert passed == [True] * logs.BURST + [False] * (20 - logs.BURST)
    assert limit.filter(record("engine %s down", "x", lineno=8))  # another call site has its own budget
    assert limit.filter(record("noisy", level=logging.DEBUG))  # debug is opt-in: never limited
    now[0] += logs.WINDOW_SECONDS
    assert limit.filter(record("engine %s down", "pod-0"))  # a new window
    assert warn_suppressed() - before == 20 - logs.BURST


def test_a_line_about_an_object_is_limited_per_object_not_per_template() -> None:
    limit = logs.RateLimit(clock=lambda: 0.0)

    def about(obj: str) -> logging.LogRecord:
        rec = record("query of %s returns nothing", obj)
        setattr(rec, logs.LIMIT_KEY, obj)
        return rec

    assert [limit.filter(about("Dashboard mon/old")) for _ in range(20)] == [True] * logs.BURST + [False] * 15
    # the same call site and template about another object: its own budget, not the one the dashboard spent
    assert [limit.filter(about("ScaledObject llm/vllm")) for _ in range(logs.BURST)] == [True] * logs.BURST
    assert not limit.filter(about("ScaledObject llm/vllm"))


def warn_suppressed() -> float:
    return next(v for _, labels, v in logs.suppressed_family().samples if labels == '{level="warn"}')


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.LogfmtFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


def test_engine_faults_log_neither_bodies_nor_credentials(captured: io.StringIO) -> None:
    prompt = "PROMPT: summarise the patient's record for Jane Doe"
    with engine_server("ok") as gone:
        closed = gone.url
    with engine_server("ok", f"<html>{prompt}</html>\n") as wrong_target:
        url = wrong_target.url.replace("http://", "http://admin:hunter2@")
        config = Engines(
            timeout_seconds=1.0,
            targets=[
                Target(url=url, labels={"namespace": "t", "pod": "wrong"}),
                Target(url=closed.replace("http://", "http://admin:hunter2@"), labels={"namespace": "t", "pod": "x"}),
            ],
        )
        collector = EngineCollector(config)
        try:
            text = render(collector.collect())
        finally:
            collector.close()
    assert 'pod="wrong",engine="unknown",reason="parse"} 1' in text  # an HTML page names no engine
    out = captured.getvalue()
    assert "unparsable body (no samples in body" in out or "unparsable body (not a sample line" in out
    assert "hunter2" not in out and "Jane Doe" not in out and "PROMPT" not in out
    # the targets' URLs are logged without their userinfo: it is split off when the target is built
    assert f"engine {closed}/metrics: connect: " in out


def test_a_client_resetting_its_connection_is_one_debug_line_not_a_traceback(
    captured: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(CollectorSet([])) as port:
        sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        sock.sendall(b"GET /metr")  # half a request line, then a reset (RST, not FIN)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        # the server thread logs when it reads the reset: wait for it (a loaded machine takes its time)
        deadline = time.monotonic() + 10
        while "ended: ConnectionResetError" not in captured.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "Traceback" not in capsys.readouterr().err
    assert "Traceback" not in captured.getvalue()
    assert "connection from 127.0.0.1 ended: ConnectionResetError" in captured.getvalue()
