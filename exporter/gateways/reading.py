"""What a gateway reader returns (pure data): per (model, tenant) counts, budgets, and what it left out."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

OTHER = "other"  # the tenant of the counts past the bound, and of a name too long to export
# a tenant is whatever a client sends (LiteLLM's `user`, a header the gateway maps to a label): a longer name is
# counted as tenant "other", not exported
MAX_TENANT_LENGTH = 128

NONE = "none"  # the request kind of tokens whose series has none of `gateways.request_kind_labels` set

# ("tokens", direction) | ("tokens", direction, request kind) | ("requests", outcome) | ("spend",)
Key = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KindSplit:
    """The request kind of a token series (`gateways.request_kind_labels`, `gateways.request_kinds`): the value of
    the first of `labels` that is set, kept by name when it is one of `kinds`, else "other" (a kind nobody listed
    never becomes a series of its own); "none" when no label is set. No labels: tokens are not split."""

    labels: tuple[str, ...] = ()
    kinds: frozenset[str] = frozenset()

    def tokens(self, direction: str, series: dict[str, str], unset: frozenset[str] = frozenset({""})) -> Key:
        """The counter key of a token series of `direction`."""
        if not self.labels:
            return ("tokens", direction)
        kind = next((series[n] for n in self.labels if series.get(n, "") not in unset), "")
        return ("tokens", direction, kind if kind in self.kinds else OTHER if kind else NONE)


@dataclass(frozen=True, slots=True)
class Budget:
    scope: str
    holder: str
    remaining: float | None
    limit: float | None


@dataclass(slots=True)
class Reading:
    """One body's counts: (model, tenant) -> counter key -> value (summed over the labels not kept)."""

    counts: dict[tuple[str, str], dict[Key, float]] = field(default_factory=dict)
    budgets: list[Budget] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    currency: str = ""  # of the spend and the budgets ("" when the gateway reports neither)
    # requests held in the gateway's queue now: (model, tenant, priority) -> count (the EPP's flow control)
    queued: dict[tuple[str, str, str], float] = field(default_factory=dict)

    def add(self, model: str, tenant: str, key: Key, value: float) -> None:
        values = self.counts.setdefault((model, tenant), {})
        values[key] = values.get(key, 0.0) + value

    def tenant(self, name: str) -> str:
        """The tenant a set name is counted as: itself, or "other" past the length cap (counted as dropped)."""
        if len(name) > MAX_TENANT_LENGTH:
            self.dropped["tenant_too_long"] += 1
            return OTHER
        return name


NO_SPLIT = KindSplit()  # tokens not split by request kind
