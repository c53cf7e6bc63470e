"""The tenant bound: at most N tenants per model keep their name, the rest are summed as tenant="other".

Per model, the active tenants (whose counts moved within the idle time) are ranked by their tokens (the
gateway's running totals, which change rank slowly); the top N are exported under their own name with the
gateway's own counter values. The others' *increases* since the previous scrape are added to one accumulator
per model, exported as tenant="other": it only ever grows, so a tenant moving between named and folded never
makes a counter go backwards, and the sum of the tenants' rates stays the model's rate. A tenant that is idle
longer than the idle time is exported under no name until it moves again; one the gateway no longer exposes is
forgotten. The state kept is one set of last values per (model, tenant) the gateway exposes: bounded by its
body, whose size the fetch caps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from exporter.gateways.reading import OTHER, Key


@dataclass(slots=True)
class Folded:
    """One scrape's exported counts: named (model, tenant) -> values; per model, the other tenants' sum and how
    many tenants were folded into it or left out as idle."""

    named: dict[tuple[str, str], dict[Key, float]] = field(default_factory=dict)
    other: dict[str, dict[Key, float]] = field(default_factory=dict)
    folded: dict[str, int] = field(default_factory=dict)
    idle: dict[str, int] = field(default_factory=dict)


def tokens(values: Mapping[Key, float]) -> float:
    return sum(v for k, v in values.items() if k[0] == "tokens")


class TenantBound:
    """The bound of one gateway; `fold` once per scrape with the gateway's running totals."""

    def __init__(self, max_per_model: int, idle_seconds: float) -> None:
        self.max_per_model = max_per_model
        self.idle_seconds = idle_seconds
        self._last: dict[tuple[str, str], dict[Key, float]] = {}
        self._moved: dict[tuple[str, str], float] = {}
        self._other: dict[str, dict[Key, float]] = {}

    def fold(self, counts: Mapping[tuple[str, str], Mapping[Key, float]], now: float) -> Folded:
        result = Folded()
        active: dict[str, list[tuple[float, str]]] = {}
        increases: dict[tuple[str, str], dict[Key, float]] = {}
        for ident, values in counts.items():
            last = self._last.get(ident)
            if last is None or any(last.get(k) != v for k, v in values.items()):
                self._moved[ident] = now
            # a counter below its last value was reset (the gateway restarted): all of it is new
            previous = last or {}
            increases[ident] = {
                k: v - previous.get(k, 0.0) if v >= previous.get(k, 0.0) else v for k, v in values.items()
            }
            model, tenant = ident
            if now - self._moved[ident] >= self.idle_seconds:
                result.idle[model] = result.idle.get(model, 0) + 1
            else:
                # the gateway's own overflow series ("other") is folded whatever its size
                rank = -1.0 if tenant == OTHER else tokens(values)
                active.setdefault(model, []).append((rank, tenant))
        for model, ranked in active.items():
            ranked.sort(key=lambda item: (-item[0], item[1]))
            keep = {tenant for rank, tenant in ranked[: self.max_per_model] if rank >= 0}
            for _, tenant in ranked:
                if tenant in keep:
                    result.named[(model, tenant)] = dict(counts[(model, tenant)])
                    continue
                other = self._other.setdefault(model, {})
                for key, increase in increases[(model, tenant)].items():
                    other[key] = other.get(key, 0.0) + increase
                if tenant != OTHER:
                    result.folded[model] = result.folded.get(model, 0) + 1
        self._last = {ident: dict(values) for ident, values in counts.items()}
        self._moved = {ident: self._moved[ident] for ident in counts}
        result.other = {model: dict(values) for model, values in self._other.items()}
        return result


def bound_queued(
    queued: Mapping[tuple[str, str, str], float], max_per_model: int
) -> tuple[dict[tuple[str, str, str], float], dict[str, int]]:
    """A gauge needs no state to bound: per model, the tenants holding most of its queue now (summed over their
    priorities; ties by name) keep their name, the others' requests are summed as tenant "other" per priority.
    Returns the (model, tenant, priority) values and, per model, how many tenants were folded."""
    held: dict[str, dict[str, float]] = {}
    for (model, tenant, _), value in queued.items():
        tenants = held.setdefault(model, {})
        tenants[tenant] = tenants.get(tenant, 0.0) + value
    keep: dict[str, set[str]] = {}
    folded: dict[str, int] = {}
    for model, tenants in held.items():
        ranked = sorted((t for t in tenants if t != OTHER), key=lambda t: (-tenants[t], t))
        keep[model] = set(ranked[:max_per_model])
        if len(ranked) > max_per_model:
            folded[model] = len(ranked) - max_per_model
    out: dict[tuple[str, str, str], float] = {}
    for (model, tenant, priority), value in queued.items():
        ident = (model, tenant if tenant in keep[model] else OTHER, priority)
        out[ident] = out.get(ident, 0.0) + value
    return out, folded
