"""Which SLO indicator each engine can serve, and at which bucket bound: the checks behind the generated SLO objects
(exporter/bundle/slo.py).

A latency objective reads a histogram's bucket `le` = the threshold; a threshold that is not a bound of the engine's
histogram has no series, and an SLO over it would show nothing rather than fail. So each latency threshold is
checked against the engine's default bucket bounds (data/histogram_buckets.json, read from the engines' sources):
on a bound it is used as is; between two bounds it is rounded down to the bound below, which measures a stricter
objective and never reports one better than it is, and the output says so; below every bound, or for an engine
whose releases expose no such histogram (TGI has no time to first token, llama.cpp no latency histogram), or whose
bounds are not recorded, the indicator is refused with the reason. Errors read the finished-request counter by
`finished_reason`, which only some engines label.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from exporter.catalogue import engine as m
from exporter.catalogue.spec import MetricSpec
from exporter.engines import releases
from exporter.engines.engine import Engine

BUCKETS = "data/histogram_buckets.json"  # in the source checkout
# engines whose finished-request counter carries `finished_reason` (research/engines.md: SGLang counts requests
# without a reason, TGI's tgi_request_success has none, llama.cpp has no such counter)
FINISHED_REASON = frozenset({"vllm", "trtllm", "lmdeploy"})


@dataclass(frozen=True)
class Indicator:
    """One SLO of one engine: `bound` is the bucket bound measured (latency; None for errors); `note` says why the
    bound differs from the threshold; `refused` (non-empty) why the engine cannot serve it."""

    engine: str
    sli: str  # "ttft", "itl", "errors"
    histogram: str | None  # the canonical histogram of a latency SLI
    threshold: float | None
    bound: float | None = None
    note: str = ""
    refused: str = ""


def load_buckets(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / BUCKETS).read_text(encoding="utf-8"))
    return data


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _first_release(engine: Engine, spec: MetricSpec) -> str:
    """The first release of the engine's table that exposes `spec` by default ("" without a table)."""
    try:
        table = releases.load(engine.name)
    except KeyError:
        return ""
    families = set(engine.sources.get(spec, ()))
    having = [r.version for r in table.releases if families & r.expected]
    return having[0] if having and having[0] != table.releases[0].version else ""


def latency(engine: Engine, spec: MetricSpec, sli: str, threshold: float, buckets: Mapping[str, Any]) -> Indicator:
    """The latency SLI `sli` of `engine` on the canonical histogram `spec` at `threshold` seconds."""
    base = Indicator(engine.name, sli, spec.name, threshold)
    if not engine.sources.get(spec):
        why = (engine.notes or {}).get(spec, f"{engine.display_name} exposes no such histogram")
        return replace(base, refused=f"no {spec.name} source: {why}")
    recorded = buckets.get(engine.name, {}).get(spec.name)
    if recorded is None:
        return replace(
            base,
            refused=f"the bucket bounds of its {spec.name} source are not recorded ({BUCKETS})",
        )
    bounds = sorted(float(b) for b in recorded["bounds"])
    since = _first_release(engine, spec)
    where = f"{recorded['family']} (default buckets{f', from {since}' if since else ''})"
    if threshold in bounds:
        return replace(base, bound=threshold)
    below = [b for b in bounds if b < threshold]
    if not below:
        return replace(
            base, refused=f"{_number(threshold)}s is below the lowest bucket bound {_number(bounds[0])}s of {where}"
        )
    above = [b for b in bounds if b > threshold]
    between = f"between {_number(below[-1])}s and {_number(above[0])}s" if above else "above every bound"
    flag = f"; {recorded['flag']} sets other bounds" if recorded.get("flag") else ""
    note = (
        f"{_number(threshold)}s is not a bucket bound of {where}: it lies {between}, so the objective is measured "
        f"at {_number(below[-1])}s (stricter){flag}"
    )
    return replace(base, bound=below[-1], note=note)


def errors(engine: Engine) -> Indicator:
    base = Indicator(engine.name, "errors", None, None)
    if not engine.sources.get(m.REQUESTS_FINISHED):
        why = (engine.notes or {}).get(m.REQUESTS_FINISHED, "no finished-request counter")
        return replace(base, refused=f"no {m.REQUESTS_FINISHED.name} source: {why}")
    if engine.name not in FINISHED_REASON:
        return replace(
            base,
            refused="its finished-request counter has no finished_reason: failed requests are not told apart",
        )
    return base
