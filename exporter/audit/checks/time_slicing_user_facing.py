"""time-slicing-user-facing: a user-facing engine on time-sliced GPUs."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, listed, na, ok, unknown
from exporter.audit.model import Surroundings
from exporter.audit.placement import REPLICAS_LABEL, TIME_SLICING_LABEL, gpu_nodes_for, time_sliced
from exporter.k8s.accelerators import SHARED_GPU_RESOURCE
from exporter.k8s.workloads import PodTemplate


def _asks_for_time_slicing(pod: PodTemplate) -> bool:
    """The nodeSelector, or one of the ORed required node affinity terms, asks for time-sliced GPU nodes."""
    c = pod.constraints
    if dict(c.node_selector).get(TIME_SLICING_LABEL) == "time-slicing":
        return True
    return any(
        key == TIME_SLICING_LABEL and operator == "In" and "time-slicing" in values
        for term in c.affinity or ()
        for key, operator, values in term.expressions
    )


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    pod = subject.workload.pod
    if not pod.gpus:
        return na("requests no GPU")
    shared = sorted(r for r in pod.gpus if SHARED_GPU_RESOURCE.match(r))
    if shared:
        return fail("requests a time-shared GPU: " + ", ".join(shared))
    if _asks_for_time_slicing(pod):
        return fail(f"selects nodes with {TIME_SLICING_LABEL}=time-slicing")
    if around.nodes is None:
        return unknown(
            "a plain GPU request is time-sliced on a node whose device plugin shares GPUs; nodes not visible"
        )
    nodes = gpu_nodes_for(subject.workload, around)
    sliced = sorted(n.name for n in nodes if time_sliced(n))
    if sliced:
        return fail(f"GPU node(s) with time-slicing ({TIME_SLICING_LABEL} / {REPLICAS_LABEL}): {listed(sliced)}")
    return ok("no time-sliced GPU node" if nodes else "no GPU node it can run on")


CHECK = Check(
    id="time-slicing-user-facing",
    severity="warning",
    reason="Time-slicing has no memory isolation, so one greedy pod drags down its neighbours: it suits "
    "development, never customer-facing services.",
    fix="Give user-facing engines whole GPUs or MIG slices (hardware isolation), or DRA; keep time-sliced "
    "nodes for development (a batch workload opts out with llm-exporter.io/audit-skip).",
    reads=("Node", "Pod"),
    evaluate=evaluate,
    engine_agnostic=True,
)
