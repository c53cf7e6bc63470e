"""`llm-exporter diagnose`: walk the stages of a slow request against a Prometheus and print the verdicts.

Exit 0 when nobody waits, 1 with findings, 2 when the telemetry cannot tell (what is missing is named) or the
input is bad (an unreachable or refusing Prometheus, a namespace or model without series, an empty window).

Against a store of many clusters (Thanos Query), `--cluster VALUE` walks one cluster as its own Prometheus
would: every query gets its `--cluster-label` matcher (`exporter.check.scope`, as `check` and the watchdog), each
finding names it. Without `--cluster`, a store whose engine series carry several values of the label is walked
once per cluster (a report each, the exit code the worst of them), never summed across clusters.
`--replica-label` names the labels Prometheus replicas differ by, deduplicated on. A store that does not answer
(a partial response) exits 2: the series it holds would be missing from every verdict.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import time
from dataclasses import replace

from exporter.check.scope import Cluster, add_replica_label
from exporter.diagnose import render
from exporter.diagnose.collect import Progress, clusters, read, rfc3339
from exporter.diagnose.limits import DEFAULT
from exporter.diagnose.promql import Scope
from exporter.diagnose.walk import ScopeError, walk
from exporter.promql.cluster import DEFAULT_LABEL, label_name
from exporter.sources.prometheus import HttpPrometheus, PartialResponseError, PrometheusError, read_secret

_DURATION = re.compile(r"^([0-9]+)(s|m|h|d|w)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prometheus", required=True, metavar="URL", help="the Prometheus (or Thanos) to read")
    p.add_argument("--namespace", default="", help="only this namespace (default: every namespace)")
    p.add_argument("--model", default="", help="only this model (default: every model)")
    p.add_argument("--at", default="now", metavar="RFC3339|now", help="the end of the window (default: now)")
    p.add_argument("--window", default="15m", help="how far back to judge, a Prometheus duration (default: 15m)")
    p.add_argument("--output", choices=("text", "markdown", "json"), default="text", help="default: text")
    p.add_argument("--bearer-token-file", metavar="FILE", help="send the token in this file to Prometheus")
    p.add_argument("--grafana-url", default="", metavar="URL", help="link each finding to its dashboard panel")
    p.add_argument(
        "--cluster",
        default="",
        metavar="VALUE",
        help="one cluster of a store of many (Thanos Query): every query scoped to its value of --cluster-label",
    )
    p.add_argument(
        "--cluster-label",
        type=label_name,
        default=DEFAULT_LABEL,
        metavar="NAME",
        help="the label that names clusters (render --cluster-label; default: %(default)s)",
    )
    add_replica_label(p)


def parse_at(value: str, now: float) -> float:
    if value == "now":
        return now
    try:
        at = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--at {value!r}: not RFC 3339 (2026-01-31T14:15:00Z) or 'now'") from None
    if at.tzinfo is None:
        raise ValueError(f"--at {value!r}: give the time zone (Z or +01:00)")
    return at.timestamp()


def window_seconds(value: str) -> int:
    m = _DURATION.match(value)
    if not m or int(m[1]) == 0:
        raise ValueError(f"--window {value!r}: a positive Prometheus duration such as 15m, 1h or 90s")
    return int(m[1]) * _UNIT_SECONDS[m[2]]


def explain(error: PrometheusError, url: str) -> str:
    """The Prometheus error as a person can act on it."""
    if isinstance(error, PartialResponseError):
        return f"{url}: {error}; the series that store holds would be missing from every verdict: nothing judged"
    if error.status == 401:
        return f"{url} answered 401 Unauthorized: give a valid token with --bearer-token-file"
    if error.status == 403:
        return f"{url} answered 403 Forbidden: the token is valid but may not query"
    if error.status == 404:
        return f"{url} answered 404: not a Prometheus API root (give the URL /api/v1/query lives under)"
    return str(error)


def _progress() -> Progress | None:
    if not sys.stderr.isatty():
        return None

    def show(stage: str, done: int, total: int) -> None:
        end = "\n" if stage == "done" else ""
        print(f"\rdiagnose: {stage:<10} {done}/{total} queries", end=end, file=sys.stderr, flush=True)

    return show


def run(args: argparse.Namespace) -> int:
    try:
        at = parse_at(args.at, time.time())
        span = window_seconds(args.window)
        token = read_secret(args.bearer_token_file, "--bearer-token-file") if args.bearer_token_file else ""
        source = HttpPrometheus(args.prometheus, bearer_token=token, replica_labels=args.replica_label)
    except (ValueError, PrometheusError) as exc:
        print(f"llm-exporter diagnose: {exc}", file=sys.stderr)
        return 2
    scope = Scope(args.namespace, args.model, args.window)
    try:
        if args.cluster:
            walks: list[Cluster | None] = [Cluster(args.cluster_label, args.cluster)]
        else:
            walks = clusters(source, scope, at, args.cluster_label)
        reports = [
            walk(read(source, replace(scope, cluster=c), at, DEFAULT, _progress()), rfc3339(at - span), args.namespace)
            for c in walks
        ]
    except PrometheusError as exc:
        print(f"llm-exporter diagnose: {explain(exc, args.prometheus)}", file=sys.stderr)
        return 2
    except ScopeError as exc:
        print(f"llm-exporter diagnose: {exc}", file=sys.stderr)
        return 2
    if len(reports) > 1 and args.output == "json":  # one report per cluster, one JSON object per line
        sys.stdout.write("".join(json.dumps(render.as_json(r, args.grafana_url)) + "\n" for r in reports))
    else:
        sys.stdout.write("\n".join(render.RENDERERS[args.output](r, args.grafana_url) for r in reports))
    return max(r.exit_code for r in reports)
