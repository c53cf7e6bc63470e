"""The watchdog's pure parts: queries read from KEDA objects and dashboard ConfigMaps, verdicts to families."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from exporter.catalogue import watchdog as spec
from exporter.exposition import Family
from exporter.watchdog.adapter import dashboard_text

log = logging.getLogger(__name__)
Q = TypeVar("Q")

DASHBOARD = "Dashboard"
PAGES = ("ScaledObject", "ScaledJob")  # what LLMAutoscalerQueryEmpty pages on: checked and logged first
MAX_LOCATION = 120  # characters of a location label: panel titles can be long
MAX_FIX = 500  # characters of the rewritten query as a label; a longer one is left to the log
ERROR_REASONS = ("unreachable", "unauthorized", "bad_query", "credentials", "partial_response", "error")
EMPTY_REASONS = ("renamed", "never_present", "disappeared", "label_mismatch", "operators", "unknown")


@dataclass(frozen=True, slots=True, order=True)
class WatchedQuery:
    kind: str  # ScaledObject, ScaledJob or Dashboard
    namespace: str
    name: str
    location: str  # trigger; for a dashboard, its ConfigMap key (then the panel, once expanded)
    expr: str  # as written ("" for a dashboard before it is expanded)
    dashboard: str | None = None  # Dashboard: its JSON, expanded at every run (variables resolved as Grafana does)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind, self.namespace, self.name, self.location)

    @property
    def owner(self) -> str:
        """The object the query belongs to (a ScaledObject, a ScaledJob, a dashboard ConfigMap)."""
        return f"{self.kind} {self.namespace}/{self.name}"


Watched = tuple[WatchedQuery, ...]  # what a reflector keeps of one object


def pages_first(watched: Iterable[WatchedQuery]) -> list[WatchedQuery]:
    """Autoscaler queries before dashboards: the max_queries bound and the log's per-object limit then never
    spend on panels what an autoscaler query, the one that pages, needs."""
    return sorted(watched, key=lambda q: (PAGES.index(q.kind) if q.kind in PAGES else len(PAGES), q))


@dataclass(frozen=True, slots=True)
class Verdict:
    empty: bool
    reason: str = ""  # one of EMPTY_REASONS when empty
    renames: tuple[tuple[str, str], ...] = ()  # (name as queried, successor) the release history names
    fix: str = ""  # the query rewritten to the successors


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_LOCATION else text[: MAX_LOCATION - 1] + "…"


def _distinct(locations: Iterable[str]) -> list[str]:
    """Each query its own series: panels sharing a title and refId (or long titles cut alike) get #2, #3…"""
    seen: dict[str, int] = {}
    out = []
    for location in locations:
        n = seen[location] = seen.get(location, 0) + 1
        tag = f" #{n}" if n > 1 else ""
        out.append(location[: MAX_LOCATION - len(tag)] + tag)
    return out


def expand(dashboard: WatchedQuery, found: Sequence[tuple[str, str, Q]]) -> list[tuple[WatchedQuery, Q]]:
    """A dashboard's (where, expr, query) as expanded in one run, each with its own series."""
    locations = _distinct(_bounded(f"{dashboard.location} {where}") for where, _, _ in found)
    return [
        (replace(dashboard, location=loc, expr=expr), q) for loc, (_, expr, q) in zip(locations, found, strict=True)
    ]


def scaler_queries(kind: str) -> Callable[[dict[str, Any]], tuple[WatchedQuery, ...] | None]:
    """The reflector transform of ScaledObjects or ScaledJobs: the queries of their prometheus triggers."""

    def transform(obj: dict[str, Any]) -> tuple[WatchedQuery, ...] | None:
        meta = obj["metadata"]
        out = []
        for i, trigger in enumerate((obj.get("spec") or {}).get("triggers") or []):
            if not isinstance(trigger, dict) or trigger.get("type") != "prometheus":
                continue
            query = (trigger.get("metadata") or {}).get("query")
            if isinstance(query, str) and query.strip():
                where = f"trigger {trigger.get('name') or i}"
                out.append(WatchedQuery(kind, meta.get("namespace", ""), meta["name"], _bounded(where), query))
        locations = _distinct(q.location for q in out)
        return tuple(replace(q, location=loc) for q, loc in zip(out, locations, strict=True)) or None

    return transform


def dashboards(obj: dict[str, Any]) -> tuple[WatchedQuery, ...] | None:
    """The reflector transform of dashboard ConfigMaps: every `*.json` key that is a dashboard, kept whole (its
    queries depend on its variables, which are resolved at every run)."""
    meta = obj["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    out = []
    for key, text in sorted((obj.get("data") or {}).items()):
        if not str(key).endswith(".json") or not isinstance(text, str):
            continue
        try:
            compact = dashboard_text(text)
        except (ValueError, TypeError, AttributeError) as exc:  # one broken dashboard, not the others
            log.warning("ConfigMap %s/%s key %s: cannot read the dashboard: %s", namespace, name, key, exc)
            continue
        out.append(WatchedQuery(DASHBOARD, namespace, name, _bounded(str(key)), "", compact))
    return tuple(out) or None


def empty_reason(reasons: Iterable[str], renamed: bool = False) -> str:
    """The bounded label value for check's diagnosis: renamed when a release history names the successor,
    else the first problem decides."""
    if renamed:
        return "renamed"
    for text in reasons:
        if "never present" in text:
            return "never_present"
        if "disappeared" in text:
            return "disappeared"
        if "matches nothing" in text or "no series has label" in text or "no series matches all" in text:
            return "label_mismatch"
        if "every selector returns series" in text:
            return "operators"
    return "unknown"


def error_reason(http_status: int, message: str, partial: bool = False) -> str:
    if partial:  # a store behind Thanos Query did not answer: its series would be missing, not absent
        return "partial_response"
    if http_status in (401, 403):
        return "unauthorized"
    if http_status in (400, 422):
        return "bad_query"
    if http_status == 0 and "cannot reach" in message:
        return "unreachable"
    return "error"


def successor_labels(verdict: Verdict) -> tuple[str, str, str] | None:
    """(renamed, successor, fix) of llm_query_successor_info, or None when no successor is known."""
    if not verdict.empty or not verdict.renames:
        return None
    fix = verdict.fix if len(verdict.fix) <= MAX_FIX else ""
    return (",".join(old for old, _ in verdict.renames), ",".join(new for _, new in verdict.renames), fix)


def families(
    verdicts: Mapping[tuple[str, str, str, str], Verdict],
    errors: Mapping[str, int],
    last_run: float | None,
    available: Mapping[str, bool],
) -> list[Family]:
    empty = Family(spec.QUERY_EMPTY)
    reason = Family(spec.QUERY_EMPTY_REASON)
    successor = Family(spec.QUERY_SUCCESSOR_INFO)
    for key, verdict in sorted(verdicts.items()):
        empty.add(key, 1.0 if verdict.empty else 0.0)
        if verdict.empty:
            reason.add((*key, verdict.reason), 1.0)
        if (named := successor_labels(verdict)) is not None:
            successor.add((*key, *named), 1.0)
    error_family = Family(spec.QUERY_CHECK_ERRORS)
    for name in sorted({*ERROR_REASONS, *errors}):
        error_family.add((name,), float(errors.get(name, 0)))
    last = Family(spec.QUERY_CHECK_LAST_RUN)
    if last_run is not None:
        last.add((), last_run)
    source = Family(spec.QUERY_SOURCE_AVAILABLE)
    for resource, ok in sorted(available.items()):
        source.add((resource,), 1.0 if ok else 0.0)
    return [empty, reason, successor, error_family, last, source]
