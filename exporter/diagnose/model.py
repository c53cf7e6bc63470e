"""The data of a walk: query results in, findings out. No I/O here."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from exporter.check.scope import Cluster
from exporter.diagnose.limits import DEFAULT, Limits

STAGES = ("telemetry", "waiting", "routing", "scaling", "placement", "engine", "ingress")
OWNERS = ("platform", "application")


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    value: float

    def label(self, name: str) -> str:
        return self.labels.get(name, "")


@dataclass(frozen=True)
class Evidence:
    query: str
    value: float
    at: str  # RFC 3339, the instant the query was evaluated at


@dataclass(frozen=True)
class Finding:
    stage: str
    verdict_id: str
    verdict: str  # one line
    evidence: tuple[Evidence, ...]
    fix: str
    owner: str
    namespace: str
    model: str
    panel: str  # the overview dashboard's panel title
    weight: float = 0.0  # the measure that orders findings of one stage (larger first)
    cluster: str = ""  # the cluster of a store of many the walk was scoped to ("" for a Prometheus of one)


@dataclass(frozen=True)
class Caveat:
    """What the walk could not judge because the running release never had the series (not a fault to fix)."""

    namespace: str
    engine: str  # the `engine` label (llamacpp)
    version: str  # the `version` label (b11434)
    metric: str  # the canonical series it lacks (llm_time_to_first_token_seconds)
    text: str  # "llama.cpp b11434 has no first-token histogram: TTFT not judged"


@dataclass(frozen=True)
class Readings:
    """Every query of the walk, as sent, and its result at `at`."""

    at: str
    window: str
    queries: Mapping[str, str]
    results: Mapping[str, tuple[Sample, ...]]
    limits: Limits = DEFAULT
    model: str = ""  # the --model of the walk: verdicts on workloads keep only those serving it
    cluster: Cluster | None = None  # the --cluster every query was scoped to

    def samples(self, qid: str) -> tuple[Sample, ...]:
        return self.results.get(qid, ())

    def evidence(self, qid: str, value: float) -> Evidence:
        return Evidence(self.queries[qid], value, self.at)


Judge = Callable[[Readings, Sequence[Finding]], list[Finding]]


@dataclass(frozen=True)
class Verdict:
    """One verdict module: its stage, what it reads, how it judges, the fix and who owns it."""

    id: str
    stage: str
    owner: str
    panel: str
    fix: str
    queries: Callable[[Limits], dict[str, str]]
    judge: Judge
    # the query recorded as `llm:diagnosis` for the dashboard's Diagnosis row ("" for none): it returns a
    # series exactly while the verdict holds
    condition: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)

    def qid(self, name: str) -> str:
        return f"{self.id}.{name}"

    def finding(
        self,
        verdict: str,
        evidence: Sequence[Evidence],
        namespace: str = "",
        model: str = "",
        *,
        weight: float = 0.0,
        owner: str = "",
        fix: str = "",
    ) -> Finding:
        return Finding(
            self.stage,
            self.id,
            verdict,
            tuple(evidence),
            fix or self.fix,
            owner or self.owner,
            namespace,
            model,
            self.panel,
            weight,
        )


def per_sample(
    query: str,
    says: Callable[[Sample], str],
    *,
    id: str,
    stage: str,
    owner: str,
    panel: str,
    fix: str,
    queries: Callable[[Limits], dict[str, str]],
    scope: Sequence[str] = (),
    weight: float | Callable[[Sample], float] = 0.0,
    recorded: bool = True,
) -> Verdict:
    """The verdict most telemetry, routing and ingress checks are: one finding per sample of `query`, saying
    `says(sample)`, scoped to the sample's `scope` labels (namespace, then model), ordered by `weight`; the
    query is the verdict's recorded condition unless `recorded` is False."""

    def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
        qid = verdict.qid(query)
        return [
            verdict.finding(
                says(s),
                [r.evidence(qid, s.value)],
                *(s.label(name) for name in scope),
                weight=weight(s) if callable(weight) else weight,
            )
            for s in r.samples(qid)
        ]

    verdict = Verdict(
        id=id,
        stage=stage,
        owner=owner,
        panel=panel,
        fix=fix,
        queries=queries,
        judge=judge,
        condition=query if recorded else "",
    )
    return verdict


def number(value: float) -> str:
    """A value as a person reads it: up to 3 significant digits, integers without a point."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    # first to 9 digits: a float's last-bit noise must not move a half-way value (4.925) up one run, down the next
    value = float(f"{value:.9g}")
    if value == int(value) or abs(value) >= 100:
        return str(round(value))
    return f"{value:.3g}"


def percent(ratio: float) -> str:
    return f"{ratio * 100:.0f} %"


def seconds(value: float) -> str:
    return f"{number(value)} s"


def explained(earlier: Sequence[Finding], namespace: str, model: str, stages: Sequence[str]) -> bool:
    """Whether a finding of `stages` already covers this namespace (and model, where both name one)."""
    return any(
        f.stage in stages and f.namespace == namespace and (not f.model or not model or f.model == model)
        for f in earlier
    )
