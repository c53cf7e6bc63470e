"""Placement: a GPU pod Pending although the cluster has that many GPUs free (LLMPodPendingWithFreeGPUs,
reason `fragmented`): no single node holds its request. The arithmetic is the verdict: "4 nvidia.com/gpu on
one node needed; 6 free as 2/2/1/1 on 4 nodes"; nodes with free GPUs the pod may not use are named with why."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Evidence, Finding, Readings, Sample, Verdict, number


def queries(limits: Limits) -> dict[str, str]:
    return {
        "fragmented": 'llm_pending_pod_gpus_requested{reason="fragmented", $NS} > 0',
        "free": "max by (node, resource) (llm_node_gpus_free{}) > 0",
        "unschedulable": "max by (node) (llm_node_schedulable{}) == 0",
        "usable": "sum by (resource) (max by (node, resource) (llm_node_gpus_free{})"
        " and on (node) (max by (node) (llm_node_schedulable{}) == 1))",
    }


def free_blocks(free: Sequence[Sample], unschedulable: set[str], resource: str) -> tuple[list[float], list[str]]:
    """The free counts of `resource` on the schedulable nodes (largest first), and the others, named."""
    blocks, barred = [], []
    for s in sorted(free, key=lambda s: (-s.value, s.label("node"))):
        if s.label("resource") != resource:
            continue
        if s.label("node") in unschedulable:
            barred.append(f"{s.label('node')} ({number(s.value)} free, cordoned)")
        else:
            blocks.append(s.value)
    return blocks, barred


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    q = VERDICT.qid
    unschedulable = {s.label("node") for s in r.samples(q("unschedulable"))}
    out = []
    for s in r.samples(q("fragmented")):
        ns, pod, resource = s.label("namespace"), s.label("pod"), s.label("resource")
        blocks, barred = free_blocks(r.samples(q("free")), unschedulable, resource)
        spread = "/".join(number(b) for b in blocks)
        text = (
            f"{ns}/{pod} is Pending: {number(s.value)} {resource} on one node needed; "
            f"{number(sum(blocks))} free as {spread or 'none'} on {len(blocks)} node(s)"
        )
        if barred:
            text += f"; not usable: {', '.join(barred)}"
        out.append(
            VERDICT.finding(
                text,
                [r.evidence(q("fragmented"), s.value), *_usable(r, resource)],
                ns,
                weight=s.value,
            )
        )
    return out


def _usable(r: Readings, resource: str) -> list[Evidence]:
    q = VERDICT.qid("usable")
    return [r.evidence(q, s.value) for s in r.samples(q) if s.label("resource") == resource]


VERDICT = Verdict(
    id="placement.fragmented",
    stage="placement",
    owner="platform",
    panel="Pending GPU pods by reason",
    fix="Bin-pack or drain small GPU pods onto fewer nodes (descheduler, cordon-and-evict, a scheduler profile "
    "with MostAllocated), or change the replica's shape (fewer GPUs per pod, GPU sharing).",
    queries=queries,
    judge=judge,
    condition="fragmented",
)
