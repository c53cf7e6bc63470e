"""Placement: a GPU pod Pending for another reason than fragmentation: `insufficient` (not enough free GPUs at
all on its eligible nodes), `constrained` (no node matches its selectors, affinity and tolerations), `fits` (a
node has room for its GPUs: it waits on something else)."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, number

WHY = {
    "insufficient": (
        "not enough free GPUs at all on its eligible nodes",
        "Add GPU nodes (or let the cluster autoscaler), or free GPUs held by other workloads.",
    ),
    "constrained": (
        "no node matches its nodeSelector, affinity and tolerations",
        "Compare the pod's nodeSelector, affinity and tolerations with the GPU nodes' labels and taints.",
    ),
    "fits": (
        "a node has room for its GPUs; it waits on something else (CPU, memory, a port, backoff)",
        "`kubectl describe pod` and its events: the scheduler names what else is missing.",
    ),
}


def queries(limits: Limits) -> dict[str, str]:
    return {"pending": "llm_pending_pod_gpus_requested{$NS} > 0"}


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    out = []
    for s in r.samples(VERDICT.qid("pending")):
        reason = s.label("reason")
        if reason not in WHY:
            continue  # fragmented: its own verdict
        why, fix = WHY[reason]
        out.append(
            VERDICT.finding(
                f"{s.label('namespace')}/{s.label('pod')} is Pending with {number(s.value)} {s.label('resource')} "
                f"requested ({reason}): {why}",
                [r.evidence(VERDICT.qid("pending"), s.value)],
                s.label("namespace"),
                weight=s.value,
                fix=fix,
            )
        )
    return out


VERDICT = Verdict(
    id="placement.pending",
    stage="placement",
    owner="platform",
    panel="Pending GPU pods by reason",
    fix="See the reason: add nodes (insufficient), fix selectors and tolerations (constrained), read the pod's "
    "events (fits).",
    queries=queries,
    judge=judge,
)
