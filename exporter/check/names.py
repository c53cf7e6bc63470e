"""What the release tables say about one engine name on one release, with the corrected name (pure).

Both modes of `check` use it: offline (`--against`) for every name an engine owns, live for a name Prometheus
never had. The lints, each with the name to use instead:
- `wrong-separator`: `vllm_x` / `sglang_x` where the engine writes `vllm:x` / `sglang:x` (SGLang's underscore
  form only ever came from Dynamo re-publishing SGLang's metrics, fixed in Dynamo in 2026-01);
- `counter-without-total`: a counter's family name where only `<name>_total` samples exist;
- `family-name`: a histogram's or summary's family name where only `_bucket`/`_sum`/`_count` samples exist;
- `summary-no-buckets`: `_bucket` of a family that is a summary on that release (TGI from 2.3.0);
- `look-alike`: a name no release had whose meant family is known (`LOOK_ALIKES`);
- `needs-flag`: a family written only with a flag or feature ("needs --enable-lora", not "renamed"), or a
  matcher on a label written only with one (SGLang's `priority`, `dp_rank`); a family hidden in a deprecation
  window (vLLM's `--show-hidden-metrics-for-version`) whose successor the history names is `renamed` instead:
  empty by default, the successor as the fix, the flag a stop-gap;
- `renamed` / `removed` / `not-yet`: from the release histories (`diagnosis`);
- `deprecated-name`: a name still written, in the window of a declared rename (llm-d's endpoint picker writes
  both names from router v0.9.0): a warning with the successor;
- `label-renamed`: a matcher on the label a rename swapped (`pod_name` on llm_d_epp_scheduler_attempts_total,
  which writes `endpoint_name`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from exporter.check import diagnosis
from exporter.check.history import engines
from exporter.check.tables import EngineTable, Family, owner
from exporter.engines import registry
from exporter.promql.selectors import Matcher

LOOK_ALIKES: dict[str, tuple[str, str]] = {
    # name as dashboards in the wild query it → (the family meant, why)
    "sglang:num_retracted_reqs_total": (
        "sglang:num_retracted_requests_total",
        "the counter of retracted requests is sglang:num_retracted_requests_total "
        "(sglang:num_retracted_reqs is the gauge of the last batch)",
    ),
    "sglang:hicache_eviction_": (
        "sglang:evicted_tokens_total",
        "HiCache evictions are counted by sglang:evicted_tokens_total",
    ),
    "sglang:hicache_load_back_": (
        "sglang:load_back_tokens_total",
        "HiCache load-backs are counted by sglang:load_back_tokens_total",
    ),
}
"""Names no release exposes, seen in public dashboards (Dynamo's SGLang dashboard, SGLang's own), whose meant
family the tables hold; keys ending in `_` match every name they begin."""

_ROUTER = "production-stack's router (src/vllm_router/services/metrics_service/__init__.py)"
OTHER_PRODUCERS: dict[str, dict[str, str]] = {
    # engine → names with its prefix that no release of it writes but another producer does → who
    "vllm": dict.fromkeys(
        (
            "vllm:current_qps",
            "vllm:avg_decoding_length",
            "vllm:num_prefill_requests",
            "vllm:num_decoding_requests",
            "vllm:num_incoming_requests_total",
            "vllm:routing_decisions_total",
            "vllm:healthy_pods_total",
            "vllm:avg_latency",
            "vllm:avg_itl",
            "vllm:input_tokens_total",
            "vllm:output_tokens_total",
            "vllm:request_errors_total",
            "vllm:request_latency_seconds_bucket",
            "vllm:request_latency_seconds_sum",
            "vllm:request_latency_seconds_count",
            "vllm:gpu_prefix_cache_hit_rate",
        ),
        _ROUTER,
    ),
}
"""Producers that write under an engine's prefix (vLLM production-stack's router re-publishes `vllm:` gauges of
its own): their names are theirs, not judged by the engine's releases. Every other name with an engine's
prefix that no release of it wrote is empty on every release."""


def other_producer(table: EngineTable, name: str) -> str | None:
    """Who writes `name` under `table`'s prefix when no release of the engine does, or None."""
    return OTHER_PRODUCERS.get(table.engine, {}).get(name)


def label_flag(table: EngineTable, matchers: Iterable[Matcher]) -> Finding | None:
    """A matcher that selects a label the engine writes only with a flag (`priority="high"`), or None."""
    engine = registry.ENGINES.get(table.engine)
    flagged = engine.label_flags if engine is not None else {}
    for m in matchers:
        needs = flagged.get(m.label)
        if needs and m.op in ("=", "=~") and m.value not in ("", ".*", ".+"):
            text = f"{table.label} writes the label {m.label} only with {needs}: {m} needs it, not renamed"
            return Finding("needs-flag", text, state="flag")
    return None


def label_renamed(table: EngineTable, name: str, matchers: Iterable[Matcher]) -> Finding | None:
    """A matcher needing a label that `name`'s predecessor wrote and `name` renamed (pod_name → endpoint_name),
    or None."""
    history = next((h for h in engines() if h.engine == table.engine), None)
    if history is None:
        return None
    swaps = {old: (new, h.name) for h in history.names.values() if h.successor == name for old, new in h.label_renames}
    for m in matchers:
        needs_label = (m.op in ("=", "=~") and m.value not in ("", ".*")) or (m.op, m.value) == ("!=", "")
        if m.label in swaps and needs_label:
            new, before = swaps[m.label]
            text = f"{name} writes no label {m.label}: it is {new} ({before}, the name it replaces, wrote {m.label})"
            return Finding("label-renamed", text)
    return None


def deprecated(table: EngineTable, name: str, version: str) -> Finding | None:
    """A name `version` still writes in the window of a declared rename: the successor to move to, or None."""
    history = [h for h in engines() if h.engine == table.engine]
    found = diagnosis.deprecated(name, version, history)
    if found is None:
        return None
    return Finding("deprecated-name", found.text, _sample(name, found.name, found.replacement), state="data")


def _sample(name: str, family: str, successor: str | None) -> str | None:
    """The successor spelled as the sample `name` is (a histogram's `_bucket` stays `_bucket`)."""
    return successor + name[len(family) :] if successor and name.startswith(family) else successor


DYNAMO_NOTE = (
    "the underscore form only ever came from Dynamo re-publishing SGLang's metrics, fixed in Dynamo in 2026-01"
)


@dataclass(frozen=True)
class Finding:
    rule: str  # the lint's id (SARIF rule)
    text: str
    replacement: str | None = None  # the sample name a fixed query uses
    state: str = "empty"  # "empty", or "flag" when a flag or feature shows it


def explain(name: str, version: str | None, table: EngineTable | None = None) -> Finding | None:
    """Why `name` has no samples on `version` of its engine (any release when None), or None when it has
    (or no engine owns it)."""
    table = table or owner(name)
    if table is None:
        return None
    releases = [version] if version else list(table.releases)
    if any(name in table.exposed(v) for v in releases):
        return None
    on = f"{table.label} {version}" if version else f"any {table.label} release"
    family = table.family_of(name)
    if family is not None and name not in family.samples:  # a histogram's or summary's family name
        samples = ", ".join(sorted(family.samples))
        return Finding("family-name", f"no {table.label} release writes {name} as a sample: {name} writes {samples}")
    if family is not None:
        gated = _gated(table, family, name, releases)
        if gated:
            return gated
        return _history(table, family, name, version, on)
    return _unknown(table, name, version, on)


def _gated(table: EngineTable, family: Family, name: str, releases: list[str]) -> Finding | None:
    exposure = family.samples.get(name)
    if exposure is None:
        return None
    for condition, (where, source) in exposure.gated.items():
        if where & set(releases):
            since = ", ".join(v for v in releases if v in where) if len(releases) == 1 else "its releases"
            if condition.startswith(HIDDEN_FLAG) and (renamed := _hidden_rename(table, name, since, condition)):
                return renamed
            text = (
                f"{name} is written by {table.label} {since} only with {condition} (declared at {source}): "
                f"needs {condition}, not renamed"
            )
            return Finding("needs-flag", text, state="flag")
    return None


HIDDEN_FLAG = "--show-hidden-metrics-for-version"


def _hidden_rename(table: EngineTable, name: str, since: str, condition: str) -> Finding | None:
    """A hidden family of a deprecation window (vLLM hides a deprecated name for one minor release before
    removing it): a rename with a grace flag, not a feature flag. Empty by default, the successor as the fix,
    the flag only as a stop-gap; None when the history names no successor."""
    history = next((h for h in engines() if h.engine == table.engine), None)
    entry = history.lookup(name) if history is not None else None
    if entry is None or not entry.successor:
        return None
    new = _sample(name, entry.name, entry.successor)
    removed = f", removed in {table.label} {entry.removed_in}" if entry.removed_in else ""
    text = (
        f"{name} is hidden by {table.label} {since} (deprecated for {entry.successor}{removed}): empty by "
        f"default; renamed to {new}; {condition} shows it again for this release only, a stop-gap"
    )
    return Finding("renamed", text, new)


def _history(table: EngineTable, family: Family, name: str, version: str | None, on: str) -> Finding:
    if version and family.type_at(version) == "summary" and name.endswith("_bucket"):
        first = min((v for v in family.types.get("summary", ())), key=table.releases.index)
        text = (
            f"{family.name} is a summary from {table.label} {first} on: it has no buckets; "
            f"use {family.name}{{quantile=...}}, {family.name}_sum or {family.name}_count"
        )
        return Finding("summary-no-buckets", text)
    first_release = next((v for v in table.releases if name in table.exposed(v)), None)
    known = _renamed(table, name, version)
    if known is not None:
        rule = "renamed" if known.replacement else "removed"
        return Finding(rule, f"not written by {on}: {known.text}", known.replacement)
    if first_release and version and table.releases.index(first_release) > table.releases.index(version):
        return Finding("not-yet", f"{name} first appears in {table.label} {first_release}: not written by {on}")
    last = next((v for v in reversed(table.releases) if name in table.exposed(v)), None)
    if last:
        after = table.releases[table.releases.index(last) + 1 : table.releases.index(last) + 2]
        gone = f"removed in {table.label} {after[0]}" if after else f"last written by {table.label} {last}"
        return Finding("removed", f"{name} was {gone}: not written by {on}")
    return Finding("removed", f"no {table.label} release writes {name} by default")


def _renamed(table: EngineTable, name: str, version: str | None) -> diagnosis.Diagnosis | None:
    """The release history's word on a family that was renamed, hidden or removed (None: it has none)."""
    history = next((h for h in engines() if h.engine == table.engine), None)
    if history is None or version is None:
        return None
    entry = history.lookup(name)
    if entry is None or not (entry.successor or entry.removed_in or entry.hidden_since):
        return None
    return diagnosis.explain(name, {table.engine: diagnosis.Running(table.engine, version, "--against")}, [history])


def _unknown(table: EngineTable, name: str, version: str | None, on: str) -> Finding:
    never = f"no {table.label} release exposes {name}"
    for prefix in table.prefixes:
        if prefix.endswith(":") and name.startswith(prefix[:-1] + "_"):
            corrected = prefix + name[len(prefix) :]
            if table.family_of(corrected) is not None:
                note = f"; {DYNAMO_NOTE}" if table.engine == "sglang" else ""
                text = f"{never}; the name is {corrected}{note}"
                follow = explain(corrected, version, table)
                return Finding("wrong-separator", text + (f"; and {follow.text}" if follow else ""), corrected)
    for key, (meant, why) in LOOK_ALIKES.items():
        if name == key or (key.endswith("_") and name.startswith(key)):
            return Finding("look-alike", f"{never}; {why}", meant)
    if table.family_of(name + "_total") is not None:
        text = f"{never}: it is a counter, its samples are {name}_total"
        return Finding("counter-without-total", text, name + "_total")
    close = similar(name, table)
    return Finding("unknown", never + (f"; similar {table.label} names: {close}" if close else ""))


def similar(name: str, table: EngineTable) -> str:
    """Names of the same engine that look like `name` (they may be a different quantity)."""
    samples = sorted({s for f in table.families.values() for s in f.samples})
    return ", ".join(difflib.get_close_matches(name, samples, n=3, cutoff=0.6))
