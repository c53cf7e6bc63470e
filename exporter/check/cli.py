"""`llm-exporter check --prometheus URL [FILES…]`: the queries that silently return nothing, and the fix.

`check --against ENGINE==VERSION [--against …] [--from ENGINE==VERSION] [FILES…]` answers the same from the
release tables alone, before an upgrade: each query is data, empty (why, and the fix) or not judged (names
no engine's table owns); with `--from`, only what the upgrade breaks (data before, empty after).
Against a store of many clusters (Thanos Query), `--cluster-label NAME` checks every query once per cluster as
that cluster sees it (the cluster's matcher on every selector, dashboards' cluster variable set to it), each
reported with `(NAME=value)`; `--cluster VALUE` checks that one; `--replica-label` names the labels Prometheus
replicas differ by. A store that does not answer (a partial response) is an error, never an empty result.
A query on another data source (Loki, Tempo…, also in a Mixed panel) and an HPA's metrics-adapter name are
listed as skipped, never parsed.
Exit 0 when every query returned data, 1 when one is empty or warned about (an `or vector(0)` hiding an empty
side, a scale-to-zero trigger that can never activate; with `--strict`, a query on an engine's names that the
tables could not judge), 2 on bad input (a file that cannot be read, parsed or
recognised, a PromQL error, a Prometheus that cannot be reached or refuses, an unknown engine or release): the
other files are still checked.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from exporter import hostile
from exporter.check import scrape
from exporter.check.evaluate import Checker, Result
from exporter.check.fix import rewrite
from exporter.check.inputs import (
    STDIN,
    BadFileError,
    Query,
    UnknownFileError,
    expand,
    file_queries,
    load_documents,
)
from exporter.check.offline import OfflineChecker, Target, TargetError, parse_target
from exporter.check.report import NOT_JUDGED, Read, write_json, write_sarif, write_text
from exporter.check.scope import Cluster, ClusterScoped, add_replica_label
from exporter.promql.cluster import DEFAULT_LABEL, label_name
from exporter.sources.prometheus import HttpPrometheus, PrometheusError, read_secret

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ("dashboards", "alerts/llm-exporter.rules.yaml")  # checked when no FILES are given


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prometheus", metavar="URL", help="Prometheus base URL (live check)")
    parser.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="ENGINE==VERSION",
        help="judge every query from the release tables of this engine release, without Prometheus (repeatable: "
        "one per engine; llm-d's endpoint picker as llm-d-router==v0.10.0)",
    )
    parser.add_argument(
        "--from",
        dest="from_",
        action="append",
        default=[],
        metavar="ENGINE==VERSION",
        help="with --against: the release upgraded from; only what the upgrade breaks is reported",
    )
    parser.add_argument(
        "files",
        nargs="*",
        type=file_name,
        metavar="FILES",
        help="Grafana dashboards (classic, v1/v2 resources, GrafanaDashboard, GrafanaManifest) and alert rules, "
        "Perses dashboards and PersesDashboards, rule files, PrometheusRules, KEDA ScaledObjects/ScaledJobs, "
        "autoscaling/v2 HPAs, prometheus-adapter configs, ConfigMaps holding them, Prometheus configs and "
        "ServiceMonitors/PodMonitors (how histograms are stored), or directories; - reads standard input "
        "(a rendered chart) (default: this bundle's dashboards and rules)",
    )
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="value of a Grafana variable (default: resolved as Grafana does, query variables from Prometheus)",
    )
    parser.add_argument(
        "--cluster-label",
        type=label_name,
        metavar="NAME",
        help="the label that names clusters in a store of many (render --cluster-label): check every query once "
        "per cluster, as that cluster sees it",
    )
    parser.add_argument(
        "--cluster",
        metavar="VALUE",
        help=f"check as this one cluster sees it (its value of --cluster-label, default label {DEFAULT_LABEL!r})",
    )
    add_replica_label(parser)
    parser.add_argument("--lookback", default="7d", help="how far back a metric counts as present (%(default)s)")
    parser.add_argument(
        "--timeout", type=hostile.seconds, default=30.0, help="per-query timeout, seconds (%(default)s)"
    )
    parser.add_argument("--bearer-token-file", type=file_name, help="a file holding the bearer token for Prometheus")
    parser.add_argument(
        "--output", choices=("text", "json", "sarif"), default="text", help="report format (%(default)s)"
    )
    parser.add_argument("--fix", action="store_true", help="print each fixable query rewritten to its successor")
    parser.add_argument("--write", action="store_true", help="rewrite the fixable queries in the files in place")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the queries that returned data too")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="with --against: fail (exit 1, SARIF level error) a query on an engine's names that the release "
        "tables could not judge",
    )


def file_name(text: str) -> Path:
    """A file argument; an empty one is refused (Path("") is the working directory, searched whole)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty file name")
    return Path(text)


def run(args: argparse.Namespace) -> int:
    try:
        values = dict(v.split("=", 1) for v in args.var)
    except ValueError:
        print("check: --var takes NAME=VALUE", file=sys.stderr)
        return 2
    if bool(args.prometheus) == bool(args.against):
        print("check: give --prometheus URL (live) or --against ENGINE==VERSION (offline), not both", file=sys.stderr)
        return 2
    if (args.cluster_label or args.cluster or args.replica_label) and not args.prometheus:
        print("check: --cluster-label, --cluster and --replica-label need --prometheus", file=sys.stderr)
        return 2
    if args.from_ and not args.against:
        print("check: --from needs --against", file=sys.stderr)
        return 2
    paths = args.files or [ROOT / p for p in BUNDLE if (ROOT / p).exists()]
    if not paths:
        print("check: no files given", file=sys.stderr)
        return 2
    prometheus: HttpPrometheus | None = None
    clusters: list[Cluster] = []
    against: dict[str, Target] = {}
    before: dict[str, Target] = {}
    if args.prometheus:
        try:
            token = read_secret(args.bearer_token_file, "--bearer-token-file") if args.bearer_token_file else ""
            prometheus = HttpPrometheus(
                args.prometheus, timeout=args.timeout, bearer_token=token, replica_labels=args.replica_label
            )
            prometheus.query("vector(1)")  # one clear error instead of one per query
            clusters = _clusters(prometheus, args.cluster_label, args.cluster)
        except (OSError, PrometheusError, ValueError) as exc:  # ValueError: no URL ("http://[::1")
            print(f"check: Prometheus {args.prometheus}: {exc}", file=sys.stderr)
            return 2
    else:
        try:
            against = _targets(args.against)
            before = _targets(args.from_)
        except TargetError as exc:
            print(f"check: {exc}", file=sys.stderr)
            return 2
    explicit = {p for p in paths if not hostile.is_dir(p)}
    errors: list[str] = []
    by_file: dict[Path, list[Query]] = {}
    scopes: dict[Path, list[Cluster | None]] = {}  # per query: the cluster it is checked as
    converting: list[str] = []
    skipped: list[Query] = []  # on another data source than Prometheus: listed, never parsed
    for path in expand(paths):
        try:
            # offline, the query variables are judged as queries too; live, Prometheus resolves them
            queries = file_queries(path, values, prometheus, with_variables=prometheus is None)
            skipped.extend(q for q in queries if q.datasource)
            by_file[path] = [q for q in queries if not q.datasource]
            if clusters:  # once per cluster, as it sees them
                per = [(q, c) for c in clusters for q in file_queries(path, values, prometheus, cluster=c)]
                pairs = [(q, c) for q, c in per if not q.datasource]
                by_file[path] = [replace(q, where=f"{q.where} ({c.label}={c.value})") for q, c in pairs]
                scopes[path] = [c for _, c in pairs]
            if prometheus is None:  # live, Prometheus itself shows how it stores histograms
                converting.extend(c for doc in load_documents(path) for c in scrape.converting(doc, str(path)))
        except UnknownFileError as exc:
            if path in explicit:
                errors.append(str(exc))
        except BadFileError as exc:
            errors.append(str(exc))
    scope = ""
    read: Read | None = None  # None: what the results list is all that was read
    if prometheus is not None:
        checker = Checker(prometheus, lookback=args.lookback)
        scoped = {c: Checker(ClusterScoped(prometheus, c), lookback=args.lookback) for c in clusters}
        results = {
            path: [
                scoped[c].check(q) if c is not None else checker.check(q)
                for q, c in zip(queries, scopes.get(path) or [None] * len(queries), strict=True)
            ]
            for path, queries in by_file.items()
        }
    else:
        recorded = {_recorded(q) for qs in by_file.values() for q in qs} - {""}
        offline = OfflineChecker(against.values(), converting, recorded, since=before.values())
        results = {path: [offline.check(q) for q in queries] for path, queries in by_file.items()}
        scope = f"on {offline.describe()}"
        if before:
            judged = Read.of([r for rs in results.values() for r in rs], len(by_file))
            read = replace(judged, upgrade=True)
            old = OfflineChecker({**against, **before}.values(), converting, recorded)
            results = {path: _broken(old, rs) for path, rs in results.items()}
            scope = f"broken by the upgrade from {old.describe()} to {offline.describe()}"
    flat = [r for rs in results.values() for r in rs]
    read = read or Read.of(flat, len(by_file))
    if not read.queries and not errors and not skipped:
        errors.append("no PromQL queries found in the given files")
    if args.write:
        errors.extend(_write(results))
    if args.output == "json":
        write_json(flat, errors, sys.stdout, read, skipped=skipped)
    elif args.output == "sarif":
        write_sarif(flat, errors, sys.stdout, strict=args.strict)
    else:
        fixes = args.fix or args.write
        write_text(
            flat,
            errors,
            sys.stdout,
            args.verbose,
            fixes=fixes,
            scope=scope,
            read=read,
            strict=args.strict,
            skipped=skipped,
        )
    if errors or any(r.status == "error" for r in flat):
        return 2
    unjudged = args.strict and any(r.status == "unjudged" and NOT_JUDGED in r.rules for r in flat)
    return 1 if unjudged or any(r.status in ("empty", "warning") for r in flat) else 0


def _clusters(prometheus: HttpPrometheus, label: str | None, value: str | None) -> list[Cluster]:
    """The clusters to check as: the one asked for, else every value of the label (none without one)."""
    if value:
        return [Cluster(label or DEFAULT_LABEL, value)]
    if not label:
        return []
    found = sorted(prometheus.label_values(label))
    if not found:
        raise PrometheusError(f"no series carries the cluster label {label!r} (is --cluster-label right?)")
    return [Cluster(label, v) for v in found]


def _recorded(query: Query) -> str:
    """The name a recording rule records ("" for any other query)."""
    return query.where.removeprefix("recording rule ") if query.where.startswith("recording rule ") else ""


def _targets(texts: list[str]) -> dict[str, Target]:
    out: dict[str, Target] = {}
    for text in texts:
        target = parse_target(text)
        if target.table.engine in out:
            raise TargetError(f"{text!r}: {target.table.label} given twice")
        out[target.table.engine] = target
    return out


def _broken(old: OfflineChecker, results: list[Result]) -> list[Result]:
    """The results that the upgrade breaks: data (or flag-gated) before, empty or warned about after."""
    return [r for r in results if r.status in ("empty", "warning") and old.check(r.query).status in ("ok", "allowed")]


def _write(results: dict[Path, list[Result]]) -> list[str]:
    errors = []
    for path, file_results in results.items():
        if not any(r.fix for r in file_results):
            continue
        if path == STDIN:
            errors.append("-: standard input cannot be rewritten: --fix prints the rewritten queries")
            continue
        try:
            text = path.read_text(encoding="utf-8")
            fixed = rewrite(text, file_results, path.suffix == ".json")
            if fixed != text:
                path.write_text(fixed, encoding="utf-8")
        except OSError as exc:
            errors.append(f"{path}: cannot rewrite: {exc.strerror}")
    return errors
