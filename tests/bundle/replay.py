"""A vLLM engine replayed from its recorded 0.32.0 body and a LiteLLM proxy from its recorded 1.110.2 body in
front of it (both serve the model `tiny`), the node role's configuration to scrape them, the rules with short
`for`s, and what a webhook receiver got from Alertmanager: shared by the end-to-end tests."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from alerts import formats
from alerts.thresholds import DEFAULT
from tests.bundle.servers import Served
from tests.fakes.engine import FakeEngine

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/vllm/0.32.0.prom"
# the same release's /v1/models answer, recorded from the real server with the same model
MODELS = FIXTURE.with_name("0.32.0-enable-mfu-metrics.models.json")
COUNTER = re.compile(r"^(vllm:\S+?(?:_total|_bucket|_count|_sum)(?:\{[^}]*\})?) (\S+)$", re.MULTILINE)
# the LiteLLM proxy's body, recorded in front of a server of the same model name (tests/gateways/data/README.md)
LITELLM = Path(__file__).resolve().parents[1] / "gateways/data/litellm-1.110.2.prom"
# the endpoint picker's body written by the Gateway API Inference Extension v1.5.0 metrics package, flow control
# queueing model `llama` for four fairness ids (tests/fixtures/epp/PROVENANCE.json)
EPP = Path(__file__).resolve().parents[1] / "fixtures/epp/gie-v1.5.0-flow-control.prom"
LITELLM_COUNTER = re.compile(r"^(litellm_\S+?_total(?:\{[^}]*\})?) (\S+)$", re.MULTILINE)


def vllm_body(scrape: int, waiting: int = 7) -> str:
    """The recorded body with `waiting` requests waiting and every counter growing with each scrape."""
    line = 'vllm:num_requests_waiting{engine="0",model_name="tiny"} '
    assert line + "0.0" in FIXTURE.read_text(), "the fixture no longer has the waiting line this test rewrites"
    body = FIXTURE.read_text().replace(line + "0.0", f"{line}{float(waiting)}")
    return COUNTER.sub(lambda m: f"{m.group(1)} {float(m.group(2)) * scrape + scrape}", body)


class ReplayedVllm(FakeEngine):
    """vLLM 0.32.0 replayed: its /version and /v1/models, and its recorded /metrics body growing with each scrape."""

    def __init__(self, waiting: int = 7) -> None:
        self.scrapes = 0
        self.waiting = waiting
        super().__init__(self._answer)

    def _answer(self, path: str) -> tuple[int, str]:
        if path == "/version":
            return 200, json.dumps({"version": "0.32.0"})
        if path == "/v1/models":
            return 200, MODELS.read_text()
        if path == "/metrics":
            self.scrapes += 1
            return 200, vllm_body(self.scrapes, self.waiting)
        return 404, ""


class ReplayedLitellm(FakeEngine):
    """LiteLLM 1.110.2 replayed: its recorded /metrics/ body, every counter growing with each scrape."""

    def __init__(self) -> None:
        self.scrapes = 0
        super().__init__(self._answer)

    def _answer(self, path: str) -> tuple[int, str]:
        if path == "/metrics/":
            self.scrapes += 1
            n = self.scrapes
            return 200, LITELLM_COUNTER.sub(lambda m: f"{m.group(1)} {float(m.group(2)) * n + n}", LITELLM.read_text())
        return 404, ""


class ReplayedEpp(FakeEngine):
    """An endpoint picker replayed: its recorded /metrics body (a gauge: the same queue at every scrape)."""

    def __init__(self) -> None:
        super().__init__(self._answer)

    def _answer(self, path: str) -> tuple[int, str]:
        return (200, EPP.read_text()) if path == "/metrics" else (404, "")


def node_config(
    engine: ReplayedVllm, gateway: ReplayedLitellm | None = None, epp: ReplayedEpp | None = None
) -> dict[str, Any]:
    """The node role's engines: the replayed vLLM, as pod demo/vllm-0 (the engine workload's first pod); and the
    replayed LiteLLM proxy in front of it (its end users as tenants, as the proxy was recorded); and the
    replayed endpoint picker, its flow control queue."""
    target = {"url": engine.url, "labels": {"namespace": "demo", "pod": "vllm-0"}}
    config: dict[str, Any] = {"engines": {"timeout_seconds": 0.8, "targets": [target]}}
    gateways = [{"url": gateway.url, "labels": {"gateway": "litellm"}}] if gateway is not None else []
    if epp is not None:
        gateways.append({"url": epp.url, "labels": {"gateway": "epp"}, "kind": "epp"})
    if gateways:
        config["gateways"] = {"targets": gateways, "tenant_labels": ["end_user"]}
    return config


def fast_rules(path: Path) -> Path:
    """The bundle's rules with short `for`s and a 1 s evaluation, written to `path`, for the end-to-end runs."""
    path.write_text(formats.rule_file(replace(DEFAULT, queue_for="2s", fragmented_for="2s", evaluation_interval="1s")))
    return path


def delivered(webhook: Served) -> dict[str, dict[str, Any]]:
    return {a["labels"]["alertname"]: a for post in webhook.posts for a in post.get("alerts", [])}
