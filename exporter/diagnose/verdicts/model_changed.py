"""Engine: what serves a model changed within the window (llm_model_info, cluster role): another checkpoint,
revision or image began serving at a known minute, the first thing to rule in or out when latency, errors or
answers moved. Context, not a fault: it names the time and what changed, never that the change was wrong.

When the model's users waited too long within the window, the change is put beside the first minute they did
("the model changed at 14:02 UTC, 3 min before the wait began at 14:05 UTC"): the first minute the first-token
or inter-token p99 over the last 5 minutes, or the queue, was above the limits of the gate (`waiting`). The
engine's `model` label is its served model name, else the path it loaded: it is matched to
`served_model_name`, else to `model`."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Sample, Verdict

WHAT = ("model", "revision", "image", "image_digest")  # what tells one checkpoint and image from another
SERVED = ("namespace", "served_model_name")


def _p99_over(histogram: str, limit: float) -> str:
    return f"histogram_quantile(0.99, sum by (namespace, model, le) (rate({histogram}_bucket{{$NSM}}[5m]))) > {limit}"


def queries(limits: Limits) -> dict[str, str]:
    waits = " or ".join(
        (
            _p99_over("llm_time_to_first_token_seconds", limits.ttft_p99_seconds),
            f"sum by (namespace, model) (llm_requests_waiting{{$NSM}}) > {limits.queue_waiting}",
            _p99_over("llm_inter_token_latency_seconds", limits.itl_p99_seconds),
        )
    )
    return {
        # when each (checkpoint, image) serving a model was first seen in the window, to the minute
        "first_seen": f"min by ({', '.join((*SERVED, *WHAT))})"
        " (min_over_time(timestamp(llm_model_info{$NS})[$W:1m]))",
        # the first minute of the window its users waited too long
        "wait_start": f"min by (namespace, model) (min_over_time(timestamp(({waits}))[$W:1m]))",
    }


def _minute(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, tz=datetime.UTC).strftime("%H:%M")


def _changes(old: Sample, new: Sample) -> str:
    return ", ".join(
        f"{name} {old.label(name) or '(unknown)'} → {new.label(name) or '(unknown)'}"
        for name in WHAT
        if old.label(name) != new.label(name)
    )


def _relative(change: float, wait: float) -> str:
    minutes = round(abs(wait - change) / 60)
    if minutes == 0:
        return "the minute the wait began"
    return f"{minutes} min {'before' if change < wait else 'after'} the wait began at {_minute(wait)} UTC"


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    qid, wait_qid = VERDICT.qid("first_seen"), VERDICT.qid("wait_start")
    waits = {(s.label("namespace"), s.label("model")): s.value for s in r.samples(wait_qid) if s.value == s.value}
    served: dict[tuple[str, str], list[Sample]] = {}
    for s in r.samples(qid):
        if s.value == s.value:  # not NaN
            served.setdefault((s.label("namespace"), s.label("served_model_name")), []).append(s)
    out = []
    for (ns, name), seen in sorted(served.items()):
        if r.model and name != r.model:
            continue
        seen.sort(key=lambda s: s.value)
        old, new = seen[0], seen[-1]
        if new.value <= old.value:
            continue  # all of them served since before the window
        wait = waits.get((ns, name or new.label("model")))
        when = f", {_relative(new.value, wait)}" if wait is not None else ""
        out.append(
            VERDICT.finding(
                f"{ns}/{name or '(unnamed)'}: the model changed at {_minute(new.value)} UTC{when} "
                f"({_changes(old, new)}): compare latency, errors and answers before and after",
                [r.evidence(qid, new.value), *([r.evidence(wait_qid, wait)] if wait is not None else [])],
                ns,
                name,
                weight=new.value,
            )
        )
    return out


VERDICT = Verdict(
    id="engine.model_changed",
    stage="engine",
    owner="application",
    panel="Time to first token",
    fix="If latency, errors or answers moved at that minute, compare the two revisions or images; "
    "`kubectl rollout undo` returns the workload to the previous one.",
    queries=queries,
    judge=judge,
)
