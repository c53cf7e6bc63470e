"""`llm-exporter audit`: each engine workload against what makes LLM serving fail.

    llm-exporter audit -f FILE|DIR|-   [--output text|json|sarif] [-v]
    llm-exporter audit [--kubeconfig F] [-n NS] [--prometheus URL] [--output …]

On manifests the thresholds are the write-ups' defaults (600 s cold start, 30 s request for the grace
period, 60 s for the ingress timeout) and the node checks are n/a; on a live cluster with `--prometheus`
they are the workload's measurements (start-up p90, request p99), and each finding says which it used.

Exit status: 0 when no check fails, 1 when one does, 2 on bad input: a file that cannot be read or parsed
(named with its position; the other files are still audited and reported), a cluster or Prometheus that
cannot be reached, or nothing to audit (neither an engine workload nor a GPU server found: a CI job pointed
at the wrong directory must not pass). Kinds no check reads are skipped with a note on stderr.
"""

from __future__ import annotations

import argparse
import errno
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from exporter import hostile
from exporter.audit import inventory, live, measured, report
from exporter.audit.base import Measured
from exporter.audit.inventory import Inventory
from exporter.audit.manifests import ManifestError, documents
from exporter.audit.recognise import engine_container
from exporter.audit.run import audit, engines
from exporter.k8s.workloads import Workload

SUFFIXES = (".yaml", ".yml", ".json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        default=[],
        metavar="FILE|DIR|-",
        type=_file_argument,
        help="manifests to audit (YAML or JSON, multi-document, helm template / kustomize build output; a "
        "directory is read recursively; - reads stdin); without -f the live cluster is audited",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster config, then ~/.kube/config)")
    parser.add_argument("-n", "--namespace", help="only this namespace (live; manifests: the default namespace)")
    parser.add_argument(
        "--prometheus", metavar="URL", help="Prometheus with the exporter's series: measured thresholds"
    )
    parser.add_argument("--window", default="7d", help="range for request durations and tokens (%(default)s)")
    parser.add_argument("--timeout", type=hostile.seconds, default=60.0, help="seconds to wait for the cluster's lists")
    parser.add_argument("--output", choices=("text", "json", "sarif"), default="text", help="report format")
    parser.add_argument("-v", "--verbose", action="store_true", help="text: list passing and n/a checks too")


def _file_argument(text: str) -> str:
    """A -f argument; an empty one is refused (Path("") is the working directory, searched whole)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty file name")
    return text


def _files(arg: str) -> Iterator[Path]:
    path = Path(arg)
    if hostile.is_dir(path):
        yield from sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    else:
        yield path


def read_manifests(
    args: list[str], stdin: TextIO | None, err: TextIO, default_namespace: str
) -> tuple[Inventory, bool]:
    """The inventory of every readable document; False when some file could not be read or parsed."""
    inv, clean = Inventory(), True
    for arg in args:
        for path in [Path("-")] if arg == "-" else _files(arg):
            name = "<stdin>" if arg == "-" else str(path)
            try:
                text = _stdin(stdin) if arg == "-" else path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                print(f"audit: {name}: cannot read: {getattr(exc, 'strerror', None) or exc}", file=err)
                clean = False
                continue
            try:
                for doc in documents(text, name):
                    inventory.add(inv, doc.obj, doc.source, default_namespace)
            except ManifestError as exc:
                print(f"audit: {exc}", file=err)
                clean = False
    inventory.finish(inv)
    for note in inv.notes:
        print(f"audit: note: {note}", file=err)
    return inv, clean


def _stdin(stdin: TextIO | None) -> str:
    if stdin is None:  # started with standard input closed (`<&-`)
        raise OSError(errno.EBADF, "standard input is closed")
    return stdin.read()


def read_cluster(args: argparse.Namespace, err: TextIO) -> Inventory | None:
    from exporter.collect import describe_pending
    from exporter.sources.kube_connect import KubeConfigError, connect
    from exporter.sources.kube_mirror import Reflectors

    try:
        api = connect(args.kubeconfig)
    except KubeConfigError as exc:
        print(f"audit: {exc}", file=err)
        return None
    views = live.reflectors(api, args.namespace, optional_retry_seconds=3600, backoff_max_seconds=5)
    pods = live.pods_reflector(api)
    views.start()
    pods.start()
    deadline = time.monotonic() + args.timeout
    try:
        while not (views.synced() and pods.synced()):
            if time.monotonic() > deadline:
                pending = {**views.pending(), **Reflectors(pods=pods).pending()}
                print(f"audit: within {args.timeout:g} s, still waiting for {describe_pending(pending)}", file=err)
                return None
            time.sleep(0.05)
        inv = live.collect(views)
        if pods.available() and inv.around.nodes is not None:
            inv.around.pods = list(pods.items().values())
        missing = live.unavailable(views)
        for name in (n for n in missing if n not in live.OPERATED):
            print(f"audit: note: {name} not served or not granted: checks reading them see none", file=err)
        if operated := [n for n in missing if n in live.OPERATED]:
            print(f"audit: note: {', '.join(operated)} not served or not granted: a workload such a resource "
                  "generates is audited as itself", file=err)  # fmt: skip
        return inv
    finally:
        views.stop()
        pods.stop()


def run(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    """The command; the streams default to the process's as they are when it runs (not when imported: a
    stream closed at start is None, and `main` wraps standard output)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    stdin = sys.stdin if stdin is None else stdin
    clean = True
    if args.files:
        if args.prometheus or args.kubeconfig:
            print("audit: -f audits manifests; --prometheus and --kubeconfig are for a live cluster", file=err)
            return 2
        inv, clean = read_manifests(args.files, stdin, err, args.namespace or "default")
    else:
        found = read_cluster(args, err)
        if found is None:
            return 2
        inv = found
    for kind, count in sorted(inv.skipped.items()):
        why = "no check reads this kind" if "/" in kind or kind[:1].isupper() else "no kind"
        print(f"audit: note: skipped {count} {kind} ({why})", file=err)
    lookup: Callable[[Workload], Measured] = lambda w: Measured()  # noqa: E731
    if args.prometheus:
        from exporter.sources.prometheus import HttpPrometheus, PrometheusError

        try:
            lookup = measured.from_prometheus(HttpPrometheus(args.prometheus), args.window)
        except PrometheusError as exc:
            print(f"audit: {args.prometheus}: {exc}", file=err)
            return 2
    targets = engines(inv.workloads)
    if not targets:
        seen = ", ".join(f"{w.namespace}/{w.kind}/{w.name}" for w in inv.workloads[:5])
        print(
            f"audit: no engine workload found ({len(inv.workloads)} Deployment/StatefulSet/LeaderWorkerSet read"
            f"{': ' + seen if seen else ''}{' …' if len(inv.workloads) > 5 else ''}; none runs an engine by its "
            "image, command, ports, labels or the llm-exporter.io/scrape annotation, and none serves HTTP on an "
            "accelerator); nothing audited" + ("" if clean else " (and the files named above could not be read)"),
            file=err,
        )
        return 2
    findings = audit(targets, inv.around, lookup)
    if args.output == "json":
        report.write_json(findings, out)
    elif args.output == "sarif":
        report.write_sarif(findings, out)
    else:
        report.write_text(findings, out, args.verbose)
    if not clean:
        return 2
    return 1 if any(f.outcome.status == "fail" for f in findings) else 0


__all__ = ["add_arguments", "engine_container", "run"]
