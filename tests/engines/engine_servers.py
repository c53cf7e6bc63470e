"""Loopback engine servers that misbehave on purpose, for the engine collector's fault tests (the fake
engine of tests/fakes/engine.py answering as vLLM does, or as a broken one would)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.fakes.engine import HANG, Answer, FakeEngine, Stream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"
HUGE_LINE = b'vllm:num_requests_waiting{model_name="x"} 1\n' * 1000


def recorded(version: str) -> str:
    return (FIXTURES / f"{version}.prom").read_text()


class EngineServer(FakeEngine):
    """vLLM's paths, with a `mode` that the test may change between scrapes: "ok" (the body), "hang" (no
    answer), "drip" (headers at once, then one byte a second: only a total deadline stops it), "500",
    "garbage" (an HTML error page) or "huge" (no Content-Length: the size cap must apply while reading)."""

    def __init__(self, mode: str, body: str = "", version: str | None = "0.32.0", models: bytes | None = None) -> None:
        self.mode = mode
        self.body = body
        self.version = version
        self.models = models  # the /v1/models answer (a recorded one); None: that path serves the body
        self.models_requests = 0
        self.metrics_requests = 0  # GETs of anything but /version
        super().__init__(self._answer)

    def _answer(self, path: str) -> Answer:
        if path == "/version":
            return (404, "not found") if self.version is None else (200, json.dumps({"version": self.version}))
        if path == "/v1/models" and self.models is not None:
            self.models_requests += 1
            return 200, self.models
        self.metrics_requests += 1
        if self.mode == "hang":
            return HANG
        if self.mode == "drip":
            data = self.body.encode()
            return Stream([bytes([ch]) for ch in data], length=len(data), pause=1.0)
        if self.mode == "500":
            return 500, "internal error"
        if self.mode == "garbage":
            return 200, "<html><body>Bad gateway</body></html>\n"
        if self.mode == "huge":
            return Stream([HUGE_LINE] * 1000)
        return 200, self.body


@contextmanager
def engine_server(
    mode: str = "ok", body: str = "", version: str | None = "0.32.0", models: bytes | None = None
) -> Iterator[EngineServer]:
    with EngineServer(mode, body, version, models) as server:
        yield server
