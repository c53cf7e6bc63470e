"""/metrics bodies of any SGLang, TGI, trtllm-serve, llama.cpp or LMDeploy release, generated from the release
tables (llm-d's endpoint picker too, per router release, as `llmd_epp`): the names, types and label names each
release's own sources declare (data/engine_metrics_by_version.json).

Values are fixed small numbers (counters 3: the engine has served requests). Spelled as each engine's client
writes them: prometheus_client `_total` counters, TGI's counters without `_total` (the name as declared),
TGI's old summaries with quantiles, llama.cpp without labels.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from exporter.engines import registry
from exporter.engines.engine_releases import SOURCE, release_name

# the engines whose bodies are generated here: every registered one but vLLM, whose bodies are captured from
# real servers (tests/fixtures/vllm); taken from the registry so that a new engine is tested without a line here
GENERATED = tuple(name for name in registry.NAMES if name != "vllm")
# engine → its entry in the release source; llm-d's endpoint picker is no engine, but its source is there too
SOURCE_KEY = {e.name: e.release_source for e in registry.ENGINES.values() if e.release_source is not None}
SOURCE_KEY["llmd_epp"] = "llmd_epp"
VALUES = {"model_name": "tiny", "engine": "0", "dp_rank": "0", "tp_rank": "0", "pp_rank": "0"}


@cache
def _source() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SOURCE.read_text())
    return data


def records(engine: str, version: str) -> list[dict[str, Any]]:
    """The default (unconditional) families of one release, as its sources declare them."""
    written = registry.ENGINES.get(engine)
    if written is not None and written.written_releases is not None:  # no source records: trtllm-serve's
        release = next(r for r in written.releases().releases if r.version == version)
        return [_trtllm_record(name) for name in sorted(release.expected)]
    for key, metrics in _source()[SOURCE_KEY[engine]].items():
        if release_name(engine, key) == version:
            return [m for m in metrics if not m.get("enabled_when")]
    raise KeyError(f"{engine} {version}")


def _trtllm_record(name: str) -> dict[str, Any]:
    kind = "counter" if name.endswith("_total") else "histogram" if name.endswith("_seconds") else "gauge"
    labels = ["model_name", "engine_type"] + (["finished_reason"] if "success" in name else [])
    return {"name": name, "type": kind, "labels": labels}


def body(engine: str, version: str, names: set[str] | None = None) -> str:
    """The body of `version`, or of only its families in `names`."""
    lines: list[str] = []
    for record in records(engine, version):
        name = record["name"]
        if names is not None and name not in names:
            continue
        labels = ",".join(f'{k}="{VALUES.get(k, "x")}"' for k in record["labels"] if not k.startswith("<"))
        kind = record["type"]
        base = name[: -len("_total")] if kind == "counter" and name.endswith("_total") else name
        lines.append(f"# HELP {base} generated from the release table")
        lines.append(f"# TYPE {base} {kind if kind in ('counter', 'gauge', 'histogram', 'summary') else 'untyped'}")
        sep = "," if labels else ""
        if kind == "histogram":
            for le, count in (("0.1", 1), ("1.0", 2), ("+Inf", 3)):
                lines.append(f'{name}_bucket{{{labels}{sep}le="{le}"}} {count}')
            lines += [f"{name}_sum{{{labels}}} 1.5", f"{name}_count{{{labels}}} 3"]
        elif kind == "summary":
            lines += [f'{name}{{{labels}{sep}quantile="0.5"}} 0.2', f"{name}_sum{{{labels}}} 1.5"]
            lines.append(f"{name}_count{{{labels}}} 3")
        else:
            lines.append(f"{name}{{{labels}}} 3")
    return "\n".join(line.replace("{}", "") for line in lines) + "\n"
