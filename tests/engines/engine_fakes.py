"""Loopback fakes that serve exactly what each engine serves: its metrics path and its own version endpoint
(and nothing vLLM-shaped: no /version unless the engine has one)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from tests.engines.engine_bodies import body
from tests.fakes.engine import FakeEngine


def routes(engine: str, version: str, answered: str | None, metrics_enabled: bool = True) -> dict[str, tuple[int, str]]:
    text = body(engine, version)
    if engine == "sglang":
        return {"/metrics": (200, text), "/get_server_info": (200, json.dumps({"version": answered, "tp_size": 1}))}
    if engine == "tgi":
        info = {"model_id": "tiny", "version": answered, "sha": "abc", "docker_label": None}
        return {"/metrics": (200, text), "/info": (200, json.dumps(info))}
    if engine == "trtllm":
        stats = json.dumps([{"iter": 1, "numActiveRequests": 0}])  # trtllm-serve's /metrics: JSON iteration stats
        return {
            "/metrics": (200, stats),
            "/prometheus/metrics": (200, text),
            "/version": (200, json.dumps({"version": answered})),
        }
    if engine == "llamacpp":
        metrics = (
            (200, text)
            if metrics_enabled
            else (501, json.dumps({"error": {"code": 501, "type": "not_supported_error"}}))
        )
        return {"/metrics": metrics, "/props": (200, json.dumps({"build_info": answered, "model_alias": "tiny"}))}
    if engine == "lmdeploy":
        return {"/metrics": (200, text)}  # no version endpoint
    raise KeyError(engine)


@contextmanager
def fake_engine(paths: dict[str, tuple[int, str]]) -> Iterator[FakeEngine]:
    """The fake engine serving `paths` (anything else: 404)."""
    with FakeEngine(lambda path: paths.get(path, (404, "Not Found"))) as server:
        yield server
