"""autoscaler-utilization-signal: an engine scaled on CPU, memory or GPU utilisation."""

from __future__ import annotations

import re

from exporter.audit.base import Check, Outcome, Subject, fail, na, ok
from exporter.audit.model import Surroundings, autoscalers_of

# GPU utilisation as DCGM, NVML exporters and dashboards name it; "busy" says nothing about who is waiting
_GPU_UTILISATION = re.compile(r"gpu_util|GPU_UTIL|gpu_utilization|duty_cycle|DEV_GPU_UTIL|gpu_busy", re.IGNORECASE)
_RESOURCE = re.compile(r"^(resource|cpu|memory):|^(cpu|memory)$")


def _utilisation(signal: str) -> bool:
    kind = signal.split(":", 1)[0]
    return kind in ("resource", "cpu", "memory") or bool(_GPU_UTILISATION.search(signal))


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    scalers = autoscalers_of(subject.workload, around)
    if not scalers:
        return na("no autoscaler targets this workload")
    wrong = [f"{a.kind} {a.name}: {s}" for a in scalers for s in a.signals if _utilisation(s)]
    if wrong:
        return fail("scales on utilisation: " + "; ".join(wrong))
    return ok("scales on " + ", ".join(s for a in scalers for s in a.signals))


CHECK = Check(
    id="autoscaler-utilization-signal",
    severity="warning",
    reason="CPU is idle while the GPU works and GPU utilisation reads 100 % for 1 request or 60, so neither "
    "says whether anyone is waiting; queue depth does.",
    fix="Scale on the queue: a KEDA prometheus trigger on sum(llm_requests_waiting{...}) (see "
    "deploy/examples/keda-scaledobject.yaml), or an HPA on that external metric; drop CPU, memory and GPU "
    "utilisation metrics.",
    reads=("HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler"),
    evaluate=evaluate,
    engine_agnostic=True,
)
