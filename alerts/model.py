"""The records of the bundle's rules: an alert (`Alert`, built by each module of `alerts/groups/`) and a
recording rule (`Recording`), kept apart from the modules that build and assemble them."""

from __future__ import annotations

from dataclasses import dataclass, field

from alerts.expr import number

SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True, kw_only=True)
class Alert:
    name: str
    group: str
    query: str
    # ">", "==", ...; "" with threshold None (the defaults) for queries that are already the condition (absent())
    op: str = ""
    threshold: float | None = None
    for_: str
    severity: str
    summary: str
    description: str
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def expr(self) -> str:
        if self.threshold is None:
            return self.query
        return f"{self.query} {self.op} {number(self.threshold)}"

    @property
    def anchor(self) -> str:
        """The runbook anchor: GitHub's slug of a `## <AlertName>` heading."""
        return self.name.lower()


@dataclass(frozen=True)
class Recording:
    name: str
    group: str
    expr: str
    labels: tuple[tuple[str, str], ...] = ()  # static labels the rule adds (several rules, one name)
