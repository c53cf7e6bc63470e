"""A vLLM engine replayed from its recorded 0.32.0 body, and what a webhook receiver got from Alertmanager:
shared by the end-to-end tests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.bundle.servers import Served

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/vllm/0.32.0.prom"
COUNTER = re.compile(r"^(vllm:\S+?(?:_total|_bucket|_count|_sum)(?:\{[^}]*\})?) (\S+)$", re.MULTILINE)


def vllm_body(scrape: int) -> str:
    """The recorded body with 7 requests waiting and every counter growing with each scrape."""
    body = FIXTURE.read_text().replace(
        'vllm:num_requests_waiting{engine="0",model_name="tiny"} 0.0',
        'vllm:num_requests_waiting{engine="0",model_name="tiny"} 7.0',
    )
    assert "} 7.0" in body, "the fixture no longer has the waiting line this test rewrites"
    return COUNTER.sub(lambda m: f"{m.group(1)} {float(m.group(2)) * scrape + scrape}", body)


class FakeEngine(Served):
    def __init__(self) -> None:
        self.scrapes = 0
        super().__init__(self._answer)

    def _answer(self, path: str) -> tuple[int, str]:
        if path == "/version":
            return 200, json.dumps({"version": "0.32.0"})
        if path == "/metrics":
            self.scrapes += 1
            return 200, vllm_body(self.scrapes)
        return 404, ""


def delivered(webhook: Served) -> dict[str, dict[str, Any]]:
    return {a["labels"]["alertname"]: a for post in webhook.posts for a in post.get("alerts", [])}
