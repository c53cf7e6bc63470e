"""time-slicing-user-facing: a user-facing engine on time-sliced GPUs."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, fail, listed, na, ok, unknown
from exporter.audit.model import SHARED_GPU_RESOURCE, Surroundings
from exporter.audit.placement import REPLICAS_LABEL, TIME_SLICING_LABEL, gpu_nodes_for, time_sliced


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    pod = subject.workload.pod
    if not pod.gpus:
        return na("requests no GPU")
    shared = sorted(r for r in pod.gpus if SHARED_GPU_RESOURCE.match(r))
    if shared:
        return fail("requests a time-shared GPU: " + ", ".join(shared))
    wanted = {**pod.node_selector, **{k: ",".join(v) for k, v in pod.node_affinity_labels.items()}}
    if "time-slicing" in wanted.get(TIME_SLICING_LABEL, ""):
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
)
