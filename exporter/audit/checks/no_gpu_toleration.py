"""no-gpu-toleration: on manifests, a GPU engine without a toleration for tainted GPU nodes."""

from __future__ import annotations

from exporter.audit.base import Check, Outcome, Subject, na, ok, unknown
from exporter.audit.model import Surroundings
from exporter.k8s import accelerators


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    if around.nodes is not None:
        return na("nodes are visible: see gpu-nodes-untainted")
    pod = subject.workload.pod
    if not pod.gpus:
        return na("requests no GPU")
    # the taint keys of the accelerators it requests (an AMD GPU's nodes are not tainted nvidia.com/gpu)
    keys = accelerators.taint_keys(pod.gpus)
    tolerated = sorted(
        {key or "every taint" for key, operator, _, _ in pod.tolerations
         if key in keys or (not key and operator == "Exists")}
    )  # fmt: skip
    if tolerated:
        return ok("tolerates " + ", ".join(tolerated))
    given = ", ".join(key for key, _, _, _ in pod.tolerations if key) or "none"
    return unknown(
        f"no toleration for a taint of its accelerators ({', '.join(sorted(pod.gpus))}; tolerations: {given}); "
        "the ExtendedResourceToleration admission plugin or the node pool may add it, or the nodes are not tainted"
    )


CHECK = Check(
    id="no-gpu-toleration",
    severity="info",
    reason="GPU nodes should be tainted so only inference pods with the matching toleration land there; a "
    "GPU engine without one suggests untainted GPU nodes.",
    fix="Taint the GPU nodes and add the matching toleration to the engine's pod template (key: the "
    "accelerator's taint, e.g. nvidia.com/gpu, amd.com/gpu, aws.amazon.com/neuron, google.com/tpu; operator "
    "Exists; effect NoSchedule).",
    reads=(),
    evaluate=evaluate,
    engine_agnostic=True,
)
