"""Telemetry: a namespace whose engines are up but which lacks a series the walk needs (first-token latency,
the queue, request duration), and that no `llm_metric_present` already explains."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict

NEEDED = {
    "ttft": ("llm_time_to_first_token_seconds", "llm_time_to_first_token_seconds_count"),
    "waiting": ("llm_requests_waiting", "llm_requests_waiting"),
    "duration": ("llm_request_duration_seconds", "llm_request_duration_seconds_count"),
}


def queries(limits: Limits) -> dict[str, str]:
    return {
        name: f"count by (namespace) (last_over_time(llm_engine_up{{$NS}}[$W]) == 1)"
        f" unless on (namespace) count by (namespace) (last_over_time({series}{{$NSM}}[$W]))"
        for name, (_, series) in NEEDED.items()
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    out = []
    for name, (metric, _) in NEEDED.items():
        for s in r.samples(VERDICT.qid(name)):
            ns = s.label("namespace")
            if any(metric in f.verdict and f.namespace == ns for f in earlier):
                continue  # a renamed metric already named
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
