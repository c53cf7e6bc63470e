"""Producers that re-export an engine's names under a prefix of their own: how a query on one is judged (pure).

Ray Serve LLM (and Ray Data LLM) run vLLM with `RayPrometheusStatLogger`, which records every vLLM family
through `ray.util.metrics`; Ray's exporter writes application metrics under `ray_` and a counter's samples
with `_total`. Since vLLM PR #25439 (merged 2025-09-23, first released in 0.11.0) the wrapper replaces every
character outside `[a-zA-Z0-9_]` by `_` (`_get_sanitized_opentelemetry_name`,
vllm/v1/metrics/ray_wrappers.py:70-80 of vLLM 0.32.0), because Ray's OpenTelemetry backend refuses `:`:
`vllm:prompt_tokens_total` is `ray_vllm_prompt_tokens_total` from vLLM 0.11.0 and `ray_vllm:prompt_tokens_total`
up to 0.10.2. A query on such a name is judged by the vLLM release it runs (`--against vllm==V`): the sample
vLLM writes on V, spelled as Ray writes it on V.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from exporter.versions import parse_version


@dataclass(frozen=True)
class ReExport:
    producer: str  # as reports name it
    engine: str  # whose release table judges the names (`vllm`)
    prefix: str  # what the producer puts before the engine's name
    engine_prefix: str  # the engine's own prefix, as its releases write it
    sanitized_from: str  # first engine release whose names the producer writes with `_` for `:`
    source: str  # where that rule is written

    def engine_name(self, name: str) -> str | None:
        """The engine's own sample name behind `name` (either spelling), or None when `name` is not one."""
        for separator in (":", "_"):
            head = self.prefix + self.engine_prefix.rstrip(":") + separator
            if name.startswith(head) and len(name) > len(head):
                return self.engine_prefix + name[len(head) :]
        return None

    def written(self, sample: str, version: str) -> str:
        """How the producer writes the engine's `sample` when it runs engine release `version`."""
        if (parse_version(version) or (0,)) >= (parse_version(self.sanitized_from) or (0,)):
            sample = re.sub(r"[^a-zA-Z0-9_]", "_", sample)
        return self.prefix + sample


RAY_SERVE_VLLM = ReExport(
    producer="Ray Serve LLM",
    engine="vllm",
    prefix="ray_",
    engine_prefix="vllm:",
    sanitized_from="0.11.0",
    source="vllm/v1/metrics/ray_wrappers.py:70-80, vLLM PR #25439",
)
RE_EXPORTS = (RAY_SERVE_VLLM,)


def re_export(name: str) -> tuple[ReExport, str] | None:
    """The producer re-exporting `name` and the engine's sample behind it, or None."""
    for export in RE_EXPORTS:
        inner = export.engine_name(name)
        if inner is not None:
            return export, inner
    return None
