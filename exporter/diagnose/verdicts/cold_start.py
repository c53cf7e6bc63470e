"""Scaling: replicas still starting long after they were created (LLMReplicaStartupSlow), with how long a start
takes (the reactive floor: a new replica serves only after it). Pending pods are the placement stage's."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose import workloads
from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, number, seconds
from exporter.diagnose.verdicts import pending


def queries(limits: Limits) -> dict[str, str]:
    return {
        "slow": "max by (namespace, workload) (llm_replica_starting_oldest_seconds{$NS})"
        f" > {number(limits.replica_startup_slow_seconds)}",
        "startup_p99": "histogram_quantile(0.99, sum by (namespace, workload, le)"
        " (increase(llm_replica_startup_seconds_bucket{$NS}[1d])))",
        "models": workloads.MODELS,
    }


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    q = VERDICT.qid
    pending_in = {s.label("namespace") for s in r.samples(pending.VERDICT.qid("pending"))}
    out = []
    for s in r.samples(q("slow")):
        ns, workload = s.label("namespace"), s.label("workload")
        if ns in pending_in:
            continue  # a Pending pod is the starting one: placement says why
        keep, model = workloads.in_scope(r, q("models"), ns, workload)
        if not keep:
            continue
        evidence = [r.evidence(q("slow"), s.value)]
        usual = next(
            (
                x.value
                for x in r.samples(q("startup_p99"))
                if x.label("namespace") == ns and x.label("workload") == workload and x.value == x.value
            ),
            None,
        )
        floor = ""
        if usual is not None:
            evidence.append(r.evidence(q("startup_p99"), usual))
            floor = f"; a start takes {seconds(usual)} (p99 over a day), the least a reactive autoscaler lags"
        out.append(
            VERDICT.finding(
                f"a replica of {ns}/{workload} has been starting for {seconds(s.value)}: the capacity asked for is "
                f"not arriving{floor}",
                evidence,
                ns,
                model,
                weight=s.value,
            )
        )
    return out


VERDICT = Verdict(
    id="scaling.cold_start",
    stage="scaling",
    owner="platform",
    panel="Cold start by phase",
    fix="Pre-pull images and cache weights on the nodes (or a shared volume); set the autoscaler's minimum "
    "replicas so that the queue survives one cold start; a pod that never gets Ready is crash-looping.",
    queries=queries,
    judge=judge,
    condition="slow",
)
