"""`llm-exporter check --prometheus URL [FILES…]`: find the queries that silently return nothing.

Runs every query of the given dashboards, rule files and KEDA ScaledObjects against a live Prometheus and,
for each empty one, says why in the manner of pint's series check: the metric was never present, it
disappeared (present earlier in the lookback window), or a label matcher matches nothing (and which).
Alerting rules are empty when healthy, so only their selectors must return series. Exit 1 when any query
is empty: the silent-rename detector for dashboards and autoscalers.
"""

from __future__ import annotations

import argparse
import difflib
import math
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from exporter.bundle.promql import PromQLSyntaxError, Selector, selectors
from exporter.bundle.queries import BadFileError, Query, expand, file_queries
from exporter.sources.prometheus import HttpPrometheus, Prometheus, PrometheusError

ALLOW_EMPTY = "# llm-exporter: allow-empty"
"""A PromQL comment that marks a query whose empty result is expected; it is reported, not failed."""

SPARSE = frozenset({"llm_pending_pod_gpus_requested", "llm_engine_scrape_error", "llm_gpu_field_unavailable"})
"""Catalogue metrics that exist only while something is wrong: their absence is the healthy state."""

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ("dashboards", "alerts/llm-exporter.rules.yaml")  # checked when no FILES are given


@dataclass
class Result:
    query: Query
    status: str  # "ok", "empty", "allowed" or "error"
    reasons: list[str] = field(default_factory=list)


class Checker:
    def __init__(self, prometheus: Prometheus, lookback: str = "7d", now: float | None = None) -> None:
        self.prometheus = prometheus
        self.lookback = lookback
        self.now = now
        self._names: list[str] | None = None

    def check(self, query: Query) -> Result:
        try:
            parsed = selectors(query.expr)
            if not query.alert and self.prometheus.query(query.expr):
                return Result(query, "ok")
            problems = [p for s in _unique(parsed) if (p := self.diagnose(s))]
        except (PrometheusError, PromQLSyntaxError) as exc:
            return Result(query, "error", [str(exc)])
        if query.alert and not problems:
            return Result(query, "ok")
        if not problems:
            problems = [
                "every selector returns series: the empty result comes from the query's operators (a "
                "join, a filter or comparison, or a rate over fewer than two samples)"
            ]
        allowed = ALLOW_EMPTY in query.expr or all(_sparse(p) for p in problems)
        return Result(query, "allowed" if allowed else "empty", problems)

    def diagnose(self, sel: Selector) -> str:
        """Why `sel` returns nothing, or "" when it returns series."""
        if not sel.name:
            return "" if self._count(str(sel)) else f"{sel}: matches no series"
        if self._count(sel.name):
            return self._matchers(sel)
        tag = "(sparse: absent while healthy) " if sel.name in SPARSE else ""
        last = self._last_seen(sel.name)
        if last is not None:
            ago = "" if math.isnan(last) else f", last seen {_duration((self.now or time.time()) - last)} ago"
            return f"{tag}{sel.name}: disappeared: present in the last {self.lookback} but not now{ago}"
        hint = self._similar(sel.name)
        return f"{tag}{sel.name}: never present in the last {self.lookback} (not scraped, or renamed){hint}"

    def _matchers(self, sel: Selector) -> str:
        if not sel.matchers or self._count(str(sel)):
            return ""
        for m in sel.matchers:
            if self._count(f"{sel.name}{{{m}}}"):
                continue
            if not self._count(f'{sel.name}{{{m.label}!=""}}'):
                if m.op in ("=", "=~") and m.value and m.value not in (".*", "(.*)"):
                    return f"{sel.name}: no series has label {m.label!r}, so {m} matches nothing"
                continue
            values = sorted(
                r["metric"].get(m.label, "") for r in self.prometheus.query(f"count by ({m.label}) ({sel.name})")
            )
            shown = ", ".join(repr(v) for v in values[:10]) + (", ..." if len(values) > 10 else "")
            return f"{sel.name}: label matcher {m} matches nothing; {m.label} has: {shown}"
        return f"{sel}: each matcher matches some series, but no series matches all of them"

    def _count(self, selector: str) -> bool:
        return bool(self.prometheus.query(f"count({selector})"))

    def _last_seen(self, name: str) -> float | None:
        """When `name` was last seen within the lookback (approximately), or None when it never was."""
        if not self.prometheus.query(f"count(last_over_time({name}[{self.lookback}]))"):
            return None
        # a 1m-step subquery for the time: it can miss a series that lived less than a minute, hence the fallback
        result = self.prometheus.query(f"max(max_over_time(timestamp({name})[{self.lookback}:1m]))")
        return float(result[0]["value"][1]) if result else float("nan")

    def _similar(self, name: str) -> str:
        if self._names is None:
            try:
                self._names = self.prometheus.label_values("__name__")
            except PrometheusError:
                self._names = []
        close = difflib.get_close_matches(name, self._names, n=3, cutoff=0.6)
        return f"; similar names present: {', '.join(close)}" if close else ""


def _unique(items: Iterable[Selector]) -> list[Selector]:
    return list(dict.fromkeys(items))


def _sparse(problem: str) -> bool:
    return problem.startswith("(sparse")


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def report(results: list[Result], out: TextIO, verbose: bool = False) -> None:
    labels = {"ok": "ok   ", "empty": "EMPTY", "allowed": "note ", "error": "ERROR"}
    for r in results:
        if r.status == "ok" and not verbose:
            continue
        print(f"{labels[r.status]} {r.query.source}: {r.query.where}", file=out)
        if r.status != "ok":
            print(f"      {r.query.expr}", file=out)
        for reason in r.reasons:
            print(f"      - {reason}", file=out)
    counts = {s: sum(r.status == s for r in results) for s in labels}
    files = len({r.query.source for r in results})
    print(
        f"{len(results)} queries in {files} files: {counts['ok']} ok, {counts['empty']} empty, "
        f"{counts['error']} errors, {counts['allowed']} empty as expected",
        file=out,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prometheus", required=True, metavar="URL", help="Prometheus base URL")
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        metavar="FILES",
        help="dashboards (JSON), rule files, PrometheusRules, ScaledObjects, or directories "
        "(default: this bundle's dashboards and rules)",
    )
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="value of a Grafana variable (default: .*, the 'All' value)",
    )
    parser.add_argument("--lookback", default="7d", help="how far back a metric counts as present (%(default)s)")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-query timeout, seconds (%(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the queries that returned data too")


def run(args: argparse.Namespace) -> int:
    """0 when every query returned data, 1 when one is empty or failed, 2 on bad input."""
    try:
        values = dict(v.split("=", 1) for v in args.var)
    except ValueError:
        print("check: --var takes NAME=VALUE", file=sys.stderr)
        return 2
    paths = args.files or [ROOT / p for p in BUNDLE if (ROOT / p).exists()]
    if not paths:
        print("check: no files given", file=sys.stderr)
        return 2
    try:
        queries = [q for path in expand(paths) for q in file_queries(path, values)]
        prometheus = HttpPrometheus(args.prometheus, timeout=args.timeout)
        prometheus.query("vector(1)")  # one clear error instead of one per query
    except (BadFileError, PrometheusError) as exc:
        print(f"check: {exc}", file=sys.stderr)
        return 2
    if not queries:
        print("check: no PromQL queries found in the given files", file=sys.stderr)
        return 2
    checker = Checker(prometheus, lookback=args.lookback)
    results = [checker.check(q) for q in queries]
    report(results, sys.stdout, args.verbose)
    return 1 if any(r.status in ("empty", "error") for r in results) else 0
