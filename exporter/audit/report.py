"""The command's outputs: text for people, JSON records, SARIF for code scanning."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from exporter import sarif
from exporter.audit.checks import CHECKS
from exporter.audit.run import Finding, not_judged

_MARK = {"fail": "FAIL", "unknown": "????", "pass": "ok  ", "n/a": "n/a "}


def write_text(findings: Sequence[Finding], out: TextIO, verbose: bool = False) -> None:
    """Failing and unknown checks per workload (every check with `verbose`), then a one-line summary."""
    current = None
    for f in findings:
        if not verbose and f.outcome.status in ("pass", "n/a"):
            continue
        w = f.workload
        head = f"{w.namespace}/{w.kind}/{w.name}"
        if head != current:
            where = f"  ({w.source.file}:{w.source.line})" if w.source.file else ""
            out.write(f"{head}{where}\n")
            current = head
            if unjudged := not_judged(f.engine):
                out.write(f"  engine not recognised: not judged: {', '.join(unjudged)}\n")
        source = (
            f" [threshold {f.outcome.threshold.value:g} s, {f.outcome.threshold.source}]" if f.outcome.threshold else ""
        )
        out.write(f"  {_MARK[f.outcome.status]} {f.check.id} ({f.check.severity}): {f.outcome.detail}{source}\n")
        if f.outcome.status == "fail":
            out.write(f"       why: {f.check.reason}\n       fix: {f.check.fix}\n")
            if f.field:
                out.write(f"      edit: {f.workload.kind} {f.workload.name}: {f.field}\n")
    counts = {s: sum(1 for f in findings if f.outcome.status == s) for s in ("fail", "unknown", "pass", "n/a")}
    workloads = len({(f.workload.namespace, f.workload.kind, f.workload.name) for f in findings})
    unknown = len({(f.workload.namespace, f.workload.kind, f.workload.name) for f in findings if not_judged(f.engine)})
    out.write(
        f"{workloads} engine workload(s){f' ({unknown} of an unknown engine)' if unknown else ''}: "
        f"{counts['fail']} failing, {counts['unknown']} unknown, "
        f"{counts['pass']} passing, {counts['n/a']} not applicable\n"
    )


def write_json(findings: Sequence[Finding], out: TextIO) -> None:
    json.dump([f.record() for f in findings], out, indent=1)
    out.write("\n")


_LEVEL: dict[str, sarif.Level] = {"warning": "warning", "info": "note"}


def write_sarif(findings: Sequence[Finding], out: TextIO) -> None:
    rules = [sarif.Rule(c.id, c.reason, c.fix) for c in CHECKS]
    results = [
        sarif.Finding(
            f.check.id,
            _LEVEL[f.check.severity],
            f"{f.workload.kind} {f.workload.namespace}/{f.workload.name}: {f.outcome.detail}",
            f.workload.source.file or f"{f.workload.namespace}/{f.workload.kind}/{f.workload.name}",
            f.workload.source.line,
        )
        for f in findings
        if f.outcome.status == "fail"
    ]
    sarif.write("llm-exporter audit", rules, results, out)
