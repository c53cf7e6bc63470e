"""What a check is, what it answers, and the thresholds it compares with (measured or the write-ups' defaults)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from exporter.audit.model import Surroundings
from exporter.k8s.workloads import Container, Workload

Status = Literal["fail", "pass", "n/a", "unknown"]
Severity = Literal["warning", "info"]  # info: advisory (the alert is info too)
ThresholdSource = Literal["measured", "default"]

# The write-ups' constants, used where nothing was measured for the workload
DEFAULT_COLD_START_SECONDS = 600.0  # cooldown and start-up probe budget: "冷却时间为 10 分钟"
DEFAULT_REQUEST_SECONDS = 30.0  # termination grace period: longer than the default 30 s
DEFAULT_INGRESS_SECONDS = 60.0  # ingress read timeout: the common 60 s default cuts long generations


@dataclass(frozen=True)
class Measured:
    """What the cluster role measured for one workload; None where it has no measurement."""

    cold_start_seconds: float | None = None  # p90 of llm_replica_startup_seconds, phases summed
    starting_seconds: float | None = None  # p90 of the `starting` phase (scheduled to Ready): the probes' span
    request_seconds: float | None = None  # p99 of llm_request_duration_seconds
    context_tokens: float | None = None  # tokens per request actually used (prompt + generation), when known


@dataclass(frozen=True)
class Threshold:
    value: float
    source: ThresholdSource


def pick(measured: float | None, default: float) -> Threshold:
    return Threshold(measured, "measured") if measured is not None and measured > 0 else Threshold(default, "default")


@dataclass(frozen=True)
class Outcome:
    status: Status
    detail: str = ""
    threshold: Threshold | None = None

    @property
    def threshold_source(self) -> ThresholdSource:
        return self.threshold.source if self.threshold else "default"


def ok(detail: str = "", threshold: Threshold | None = None) -> Outcome:
    return Outcome("pass", detail, threshold)


def fail(detail: str, threshold: Threshold | None = None) -> Outcome:
    return Outcome("fail", detail, threshold)


def na(detail: str) -> Outcome:
    return Outcome("n/a", detail)


def unknown(detail: str, threshold: Threshold | None = None) -> Outcome:
    return Outcome("unknown", detail, threshold)


@dataclass(frozen=True)
class Subject:
    """One engine workload as a check sees it."""

    workload: Workload
    engine_container: Container
    engine: str  # "vllm", "sglang", ... ("" when only the annotation or a label said it is an engine, "unknown"
    # for a GPU server whose engine is not recognised)
    measured: Measured


Evaluate = Callable[[Subject, Surroundings], Outcome]


@dataclass(frozen=True)
class Check:
    id: str
    severity: Severity
    reason: str  # one sentence, from the write-ups
    fix: str
    reads: tuple[str, ...]  # the object kinds it reads besides the workload
    evaluate: Evaluate
    # whether it judges any engine alike (probes, drain, PDB, autoscaler, scheduling, ingress); one that reads
    # the engine's own flags is not run on a GPU server whose engine is not recognised (engine "unknown")
    engine_agnostic: bool


def seconds(value: float) -> str:
    return f"{value:g} s"


def listed(names: Sequence[str], most: int = 5) -> str:
    """The first `most` names, comma-separated, and "…" when there are more: a detail stays one line."""
    return ", ".join(names[:most]) + (" …" if len(names) > most else "")
