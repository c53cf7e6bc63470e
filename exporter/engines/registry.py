"""Every engine the exporter knows, and how a body or a config key picks one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from exporter.engines import llamacpp, lmdeploy, sglang, tgi, trtllm, vllm
from exporter.engines.engine import Engine

_ALL = (vllm.SPEC, sglang.SPEC, tgi.SPEC, trtllm.SPEC, llamacpp.SPEC, lmdeploy.SPEC)
ENGINES: dict[str, Engine] = {e.name: e for e in _ALL}
NAMES = tuple(ENGINES)
AUTO = "auto"
if TYPE_CHECKING:
    EngineName = str  # a Literal built at run time is opaque to a type checker
else:
    EngineName = Literal[(AUTO, *NAMES)]  # what a target's `engine:` accepts, checked by the config loader
FALLBACK = "vllm"  # how an `auto` target's body that names no engine is read
UNKNOWN = "unknown"  # the `engine` label of an `auto` target no body has identified yet (down since start)
# engines whose `/metrics` is not the text format (trtllm-serve): an unidentified JSON `/metrics` is tried at theirs
JSON_AT_METRICS = tuple(e for e in _ALL if e.json_at_metrics)
# a fetch's detail that says an engine's metrics are off (llama.cpp without --metrics: "HTTP 501")
METRICS_DISABLED = frozenset(f"HTTP {e.metrics_disabled_status}" for e in _ALL if e.metrics_disabled_status)


def label_of(configured: str) -> str:
    """The `engine` label of a target no body has identified yet."""
    return UNKNOWN if configured == AUTO else configured


def get(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}: one of {', '.join(NAMES)}") from None


def detect(body: str) -> Engine | None:
    """The engine whose family prefix the body's first prefixed sample or TYPE line carries, or None."""
    for line in body.split("\n", 4000)[:4000]:  # the engine's own families come early in every known body
        name = line[7:] if line.startswith("# TYPE ") else line
        if not name or name[0] == "#":
            continue
        for engine in ENGINES.values():
            if any(name.startswith(prefix) for prefix in engine.prefixes):
                return engine
    return None
