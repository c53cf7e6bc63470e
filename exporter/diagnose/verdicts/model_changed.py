"""Engine: what serves a model changed within the window (llm_model_info, cluster role): another checkpoint,
revision or image began serving at a known minute, the first thing to rule in or out when latency, errors or
answers moved. Context, not a fault: it names the time and what changed, never that the change was wrong."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Sample, Verdict

WHAT = ("model", "revision", "image", "image_digest")  # what tells one checkpoint and image from another
SERVED = ("namespace", "served_model_name")


def queries(limits: Limits) -> dict[str, str]:
    return {
        # when each (checkpoint, image) serving a model was first seen in the window, to the minute
        "first_seen": f"min by ({', '.join((*SERVED, *WHAT))})"
        " (min_over_time(timestamp(llm_model_info{$NS})[$W:1m]))",
    }


def _minute(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, tz=datetime.UTC).strftime("%H:%M")


def _changes(old: Sample, new: Sample) -> str:
    return ", ".join(
        f"{name} {old.label(name) or '(unknown)'} → {new.label(name) or '(unknown)'}"
        for name in WHAT
        if old.label(name) != new.label(name)
    )


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    qid = VERDICT.qid("first_seen")
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
        out.append(
            VERDICT.finding(
                f"{ns}/{name or '(unnamed)'}: what serves it changed at {_minute(new.value)} UTC "
                f"({_changes(old, new)}): compare latency, errors and answers before and after",
                [r.evidence(qid, new.value)],
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
