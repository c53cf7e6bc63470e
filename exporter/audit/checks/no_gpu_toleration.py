"""no-gpu-toleration: on manifests, a GPU engine without a toleration for tainted GPU nodes."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, na, ok, unknown
from exporter.audit.model import GPU_TAINT_KEYS, Surroundings


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    if around.nodes is not None:
        return na("nodes are visible: see gpu-nodes-untainted")
    pod = subject.workload.pod
    if not pod.gpus:
        return na("requests no GPU")
    tolerated = [t for t in pod.tolerations if (t.operator == "Exists" and not t.key) or t.key in GPU_TAINT_KEYS]
    if tolerated:
        return ok("tolerates " + ", ".join(t.key or "every taint" for t in tolerated))
    keys = ", ".join(t.key for t in pod.tolerations if t.key) or "none"
    return unknown(
        f"no toleration for a GPU taint (tolerations: {keys}); the ExtendedResourceToleration admission "
        "plugin or the node pool may add it, or the GPU nodes are not tainted"
    )


CHECK = Check(
    id="no-gpu-toleration",
    severity="info",
    reason="GPU nodes should be tainted so only inference pods with the matching toleration land there; a "
    "GPU engine without one suggests untainted GPU nodes.",
    fix="Taint the GPU nodes and add the toleration (key nvidia.com/gpu, operator Exists, effect NoSchedule) "
    "to the engine's pod template.",
    reads=(),
    evaluate=evaluate,
)
