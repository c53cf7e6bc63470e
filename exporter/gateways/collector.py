"""The gateway collector: scrape each of `gateways.targets`, read its tenants, bound them, and export
`llm_gateway_*`.

    llm_gateway_up{gateway="litellm",kind="litellm"} 1
    llm_gateway_tokens_total{gateway="litellm",tenant="team-a",model="tiny",direction="prompt"} 120
    llm_gateway_tokens_total{gateway="litellm",tenant="other",model="tiny",direction="prompt"} 4210

A gateway that is down, hangs or answers something else degrades only its own series (`llm_gateway_up 0`,
`llm_gateway_scrape_error{reason}`), within the configured timeout.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from exporter import userinfo
from exporter.catalogue import gateway as m
from exporter.config import Gateways, GatewayTarget
from exporter.engines import parser
from exporter.exposition import Family
from exporter.gateways import registry
from exporter.gateways.reading import OTHER, Budget, KindSplit, Reading
from exporter.gateways.tenants import Folded, TenantBound, bound_queued
from exporter.sources import http

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Gateway:
    url: str  # the metrics URL, without userinfo
    name: str  # the `gateway` label
    kind: str
    auth: tuple[str, str] | None
    password_file: str
    bearer_token_file: str


def from_target(target: GatewayTarget) -> Gateway:
    url, credentials = userinfo.split(target.url)
    parts = urlsplit(url)
    if parts.path.rstrip("/") == "":
        # a base URL: read where its kind serves metrics (an `auto` one where LiteLLM mounts its metrics app)
        kind = registry.KINDS.get(target.kind)
        url = url.rstrip("/") + (kind.metrics_path if kind else registry.AUTO_METRICS_PATH)
    name = target.labels.get("gateway") or parts.netloc
    basic = target.basic_auth
    auth = (basic.username, "") if basic.username else credentials
    return Gateway(url, name, target.kind, auth, basic.password_file, target.bearer_token_file)


@dataclass(slots=True)
class Scraped:
    gateway: Gateway
    kind: str  # "" when unknown
    error: str  # "" on success
    reading: Reading | None = None
    folded: Folded | None = None


class GatewayCollector:
    name = "gateways"

    def __init__(self, config: Gateways) -> None:
        self._config = config
        self._gateways = [from_target(t) for t in config.targets]
        self._split = KindSplit(tuple(config.request_kind_labels), frozenset(config.request_kinds))
        self._bounds = {
            g.url: TenantBound(config.max_tenants_per_model, config.tenant_idle_seconds) for g in self._gateways
        }

    def collect(self) -> list[Family]:
        deadline = time.monotonic() + self._config.timeout_seconds
        scraped = [self._scrape(g, deadline) for g in self._gateways]
        return build_families(scraped, self._config.max_tenants_per_model, bool(self._split.labels))

    def _scrape(self, gateway: Gateway, deadline: float) -> Scraped:
        kind = registry.KINDS.get(gateway.kind)
        try:
            raw = http.get(
                gateway.url,
                timeout=max(0.05, deadline - time.monotonic()),
                max_bytes=self._config.max_response_bytes,
                auth=_basic(gateway),
                bearer=http.read_secret(gateway.bearer_token_file, "bearer_token_file")
                if gateway.bearer_token_file
                else None,
            )
            body = raw.decode("utf-8", errors="replace")
            kind = kind or registry.detect(body)
            if kind is None:
                return Scraped(gateway, "", "unknown_kind")
            reading = kind.read(body, self._config.tenant_labels, self._split)
        except http.FetchError as exc:
            log.debug("gateway %s: %s", gateway.url, exc)
            return Scraped(gateway, kind.name if kind else "", exc.reason)
        except parser.ParseError as exc:
            log.debug("gateway %s: unparsable body (%s)", gateway.url, str(exc).split(":")[0])
            return Scraped(gateway, kind.name if kind else "", "parse")
        folded = self._bounds[gateway.url].fold(reading.counts, time.monotonic())
        return Scraped(gateway, kind.name, "", reading, folded)


def _basic(gateway: Gateway) -> tuple[str, str] | None:
    if gateway.auth is None:
        return None
    if gateway.password_file:
        return gateway.auth[0], http.read_secret(gateway.password_file, "basic_auth.password_file")
    return gateway.auth


def build_families(scraped: list[Scraped], max_per_model: int, by_kind: bool = False) -> list[Family]:
    """The gateway families of one scrape (pure: tested with exact exposition text); the tokens with
    `request_kind` when `by_kind` (gateways.request_kind_labels set)."""
    tokens, requests, spend = Family(m.TOKENS_BY_KIND if by_kind else m.TOKENS), Family(m.REQUESTS), Family(m.SPEND)
    remaining, limit, queued = Family(m.BUDGET_REMAINING), Family(m.BUDGET_LIMIT), Family(m.QUEUED)
    folded_f, idle_f, dropped_f = Family(m.TENANTS_FOLDED), Family(m.TENANTS_IDLE), Family(m.SERIES_DROPPED)
    up, error = Family(m.UP), Family(m.SCRAPE_ERROR)
    for s in sorted(scraped, key=lambda s: s.gateway.name):
        name = s.gateway.name
        up.add((name, s.kind or "unknown"), 0.0 if s.error else 1.0)
        if s.error or s.reading is None or s.folded is None:
            error.add((name, s.kind or "unknown", s.error), 1.0)
            continue
        f = s.folded
        rows = [*((mt, values) for mt, values in f.named.items()), *(((mo, OTHER), v) for mo, v in f.other.items())]
        for (model, tenant), values in sorted(rows):
            for key, value in sorted(values.items()):
                if key[0] == "tokens":
                    tokens.add((name, tenant, model, *key[1:]), value)
                elif key[0] == "requests":
                    requests.add((name, tenant, model, key[1]), value)
                else:
                    spend.add((name, tenant, model, s.reading.currency), value)
        held, folded = bound_queued(s.reading.queued, max_per_model)
        for (model, tenant, priority), value in sorted(held.items()):
            queued.add((name, tenant, model, priority), value)
        for model, count in sorted((f.folded | folded).items()):
            folded_f.add((name, model), float(count))
        for model, count in sorted(f.idle.items()):
            idle_f.add((name, model), float(count))
        dropped = dict(s.reading.dropped)
        by_scope: dict[str, list[Budget]] = {}
        for budget in s.reading.budgets:
            by_scope.setdefault(budget.scope, []).append(budget)
        for scope, budgets in sorted(by_scope.items()):
            # the holders closest to running out are the ones worth a series
            budgets.sort(key=lambda b: (b.remaining if b.remaining is not None else float("inf"), b.holder))
            if len(budgets) > max_per_model:
                dropped["budget_over_limit"] = dropped.get("budget_over_limit", 0) + len(budgets) - max_per_model
            for b in sorted(budgets[:max_per_model], key=lambda b: b.holder):
                if b.remaining is not None:
                    remaining.add((name, scope, b.holder, s.reading.currency), b.remaining)
                if b.limit is not None:
                    limit.add((name, scope, b.holder, s.reading.currency), b.limit)
        for reason, count in sorted(dropped.items()):
            dropped_f.add((name, reason), float(count))
    return [tokens, requests, spend, remaining, limit, queued, folded_f, idle_f, dropped_f, up, error]
