"""Telemetry: a namespace whose engines are up but which lacks a series the walk needs (first-token latency,
the queue, request duration), and that no `llm_metric_present` already explains.

A series the running release never had (llama.cpp has no first-token or request-duration histogram in any
release; TGI no first-token one) is no telemetry to fix: the release tables say so (`exporter.engines.lacking`),
and it is a caveat of the report instead ("llama.cpp b11434 has no first-token histogram: TTFT not judged"),
while the walk goes on with what there is. Only a namespace whose every engine release lacks the series is
spared the finding.
"""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Caveat, Finding, Readings, Verdict
from exporter.engines import registry
from exporter.engines.lacking import never_had

NEEDED = {
    "ttft": ("llm_time_to_first_token_seconds", "llm_time_to_first_token_seconds_count"),
    "waiting": ("llm_requests_waiting", "llm_requests_waiting"),
    "duration": ("llm_request_duration_seconds", "llm_request_duration_seconds_count"),
}
# the series whose absence by release is a caveat → (what it is, what the walk then does not judge); the
# inter-token histogram is read by the gate too, though its absence alone never made the walk "cannot tell"
JUDGED = {
    "llm_time_to_first_token_seconds": ("first-token histogram", "TTFT not judged"),
    "llm_requests_waiting": ("queue gauge", "the queue not judged"),
    "llm_inter_token_latency_seconds": ("inter-token histogram", "inter-token latency not judged"),
    "llm_request_duration_seconds": ("request-duration histogram", "answers cut by a route timeout not judged"),
}
ENGINES = "group by (namespace, engine, version) (last_over_time(llm_engine_info{$NS}[$W]))"


def queries(limits: Limits) -> dict[str, str]:
    missing = {
        name: f"count by (namespace) (last_over_time(llm_engine_up{{$NS}}[$W]) == 1)"
        f" unless on (namespace) count by (namespace) (last_over_time({series}{{$NSM}}[$W]))"
        for name, (_, series) in NEEDED.items()
    }
    return {**missing, "engines": ENGINES}


def _engines(r: Readings) -> dict[str, set[tuple[str, str]]]:
    """Namespace → the (engine, version) of every engine seen in it over the window."""
    out: dict[str, set[tuple[str, str]]] = {}
    for s in r.samples(VERDICT.qid("engines")):
        out.setdefault(s.label("namespace"), set()).add((s.label("engine"), s.label("version")))
    return out


def caveats(r: Readings) -> list[Caveat]:
    """A caveat for each engine release in scope that never had a series the walk reads, in namespace order."""
    out = []
    for ns, engines in sorted(_engines(r).items()):
        for engine, version in sorted(engines):
            for metric, (what, unjudged) in JUDGED.items():
                if never_had(engine, version, metric):
                    name = registry.ENGINES[engine].display_name
                    out.append(Caveat(ns, engine, version, metric, f"{name} {version} has no {what}: {unjudged}"))
    return out


def _never_had_anywhere(engines: set[tuple[str, str]], metric: str) -> bool:
    return bool(engines) and all(never_had(engine, version, metric) for engine, version in engines)


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    out = []
    engines = _engines(r)
    for name, (metric, _) in NEEDED.items():
        for s in r.samples(VERDICT.qid(name)):
            ns = s.label("namespace")
            if any(metric in f.verdict and f.namespace == ns for f in earlier):
                continue  # a renamed metric already named
            if _never_had_anywhere(engines.get(ns, set()), metric):
                continue  # no release running there has it: a caveat of the report, nothing to fix
            out.append(
                VERDICT.finding(
                    f"{metric} has no series in {ns} although {number_of(s.value)} engine(s) there are up: the "
                    "verdicts that read it cannot tell",
                    [r.evidence(VERDICT.qid(name), s.value)],
                    ns,
                )
            )
    return out


def number_of(value: float) -> str:
    return str(int(value))


VERDICT = Verdict(
    id="telemetry.series_missing",
    stage="telemetry",
    owner="platform",
    panel="Missing canonical series",
    fix="Compare the engine's /metrics with `llm-exporter mappings --version <running version>`; the engine may "
    "not expose the series at all (an older release, a disabled feature).",
    queries=queries,
    judge=judge,
)
