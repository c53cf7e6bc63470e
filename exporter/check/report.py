"""Results as text for people, JSON or SARIF for CI: one record per query (file, location, expr, status, reasons,
fix, rules); SARIF names each finding's lint as its rule and the line of the file that holds the query."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from exporter import sarif
from exporter.check import hpa
from exporter.check.evaluate import Result
from exporter.check.inputs import Query

NOT_JUDGED = "engine-name-not-judged"  # the rule offline check gives such a query (offline.NOT_JUDGED)
LABELS = {
    "ok": "ok   ",
    "empty": "EMPTY",
    "allowed": "note ",
    "error": "ERROR",
    "warning": "WARN ",
    "unjudged": "skip ",
}


def record(result: Result) -> dict[str, Any]:
    return {
        "file": result.query.source,
        "location": result.query.where,
        "expr": result.query.expr,
        "status": result.status,
        "reasons": result.reasons,
        "fix": result.fix,
        "rules": result.rules,
    }


def skipped_record(query: Query) -> dict[str, Any]:
    return {"file": query.source, "location": query.where, "expr": query.expr, "datasource": query.datasource}


def skipped_reason(query: Query) -> str:
    if query.datasource == hpa.ADAPTER:
        return "a metrics adapter's name, not a Prometheus series: check the adapter's rules"
    return f"runs on {query.datasource}, not PromQL: not checked"


def counts(results: Sequence[Result]) -> dict[str, int]:
    return {s: sum(r.status == s for r in results) for s in LABELS}


@dataclass(frozen=True)
class Read:
    """What was read and judged, whatever the report lists (with `upgrade`, only what the upgrade breaks)."""

    queries: int
    files: int
    judged: int  # the queries a table or Prometheus could answer for: not "not judged"
    upgrade: bool = False

    @classmethod
    def of(cls, results: Sequence[Result], files: int) -> Read:
        return cls(len(results), files, sum(r.status != "unjudged" for r in results))


def write_json(
    results: Sequence[Result],
    errors: Sequence[str],
    out: TextIO,
    read: Read | None = None,
    skipped: Sequence[Query] = (),
) -> None:
    read = read or Read.of(results, len({r.query.source for r in results}))
    report = {"results": [record(r) for r in results], "errors": list(errors), "counts": counts(results)}
    report["read"] = {"queries": read.queries, "files": read.files, "judged": read.judged}
    report["skipped"] = [skipped_record(q) for q in skipped]  # not PromQL: not among the queries read
    json.dump(report, out, indent=1)
    out.write("\n")


def write_text(
    results: Sequence[Result],
    errors: Sequence[str],
    out: TextIO,
    verbose: bool = False,
    fixes: bool = False,
    scope: str = "",
    read: Read | None = None,
    strict: bool = False,
    skipped: Sequence[Query] = (),
) -> None:
    for error in errors:
        print(f"ERROR {error}", file=out)
    for query in skipped:
        print(f"other {query.source}: {query.where}: {skipped_reason(query)}", file=out)
    for r in results:
        failed = strict and NOT_JUDGED in r.rules  # --strict fails it: say why
        if r.status in ("ok", "unjudged") and not verbose and not failed:
            continue
        print(f"{LABELS[r.status]} {r.query.source}: {r.query.where}", file=out)
        if r.status != "ok":
            print(f"      {r.query.expr}", file=out)
        for reason in r.reasons:
            print(f"      - {reason}", file=out)
        if fixes and r.fix is not None:
            print(f"      fix: {r.fix}", file=out)
    read = read or Read.of(results, len({r.query.source for r in results}))
    print(summary(results, errors, read, scope, skipped), file=out)


def summary(
    results: Sequence[Result], errors: Sequence[str], read: Read, scope: str, skipped: Sequence[Query] = ()
) -> str:
    """The last line: how many queries of how many files were read and judged, then what was found."""
    n = counts(results)
    head = f"{read.queries} queries in {read.files} files"
    if read.upgrade:  # the results are only those the upgrade breaks: say what they are a part of
        unjudged = read.queries - read.judged
        kinds = [f"{n['empty']} empty"] + ([f"{n['warning']} warnings"] if n["warning"] else [])
        found = f"{len(results)} {scope} ({', '.join(kinds)})" if results else f"none {scope}"
        line = f"{head}: {read.judged} judged" + (f", {unjudged} not judged" if unjudged else "") + f"; {found}"
    else:
        line = (
            f"{head}: {n['ok']} ok, {n['empty']} empty, {n['error']} errors, {n['allowed']} empty as expected"
            + (f", {n['warning']} warnings" if n["warning"] else "")
            + (f", {n['unjudged']} not judged" if n["unjudged"] else "")
            + (f" {scope}" if scope else "")
        )
    if skipped:
        on = sorted(Counter(q.datasource for q in skipped).items())
        line += f"; {len(skipped)} skipped (" + ", ".join(f"{count} {kind}" for kind, count in on) + ")"
    return line + (f"; {len(errors)} files not checked" if errors else "")


RULES = (
    sarif.Rule("empty-query", "A query returns no series.", "Use the name the release writes (see the message)."),
    sarif.Rule("renamed", "A metric the engine renamed.", "Rewrite to the successor (check --fix/--write)."),
    sarif.Rule("removed", "A metric the engine no longer writes, with no successor.", "Drop or replace the panel."),
    sarif.Rule("not-yet", "A metric newer than the engine release.", "Upgrade, or use the older name."),
    sarif.Rule("unknown", "An engine-prefixed name no release of that engine writes.", "Use a name it writes."),
    sarif.Rule(
        "wrong-separator",
        "The engine's separator spelled wrong (vllm_ for vllm:; Ray's ray_vllm: for ray_vllm_ from vLLM 0.11.0).",
        "Use the name given.",
    ),
    sarif.Rule("counter-without-total", "A counter queried without _total.", "Query NAME_total."),
    sarif.Rule("family-name", "A histogram's or summary's family name queried as a sample.", "Query a sample."),
    sarif.Rule("summary-no-buckets", "_bucket of a family that is a summary.", "Use quantile, _sum or _count."),
    sarif.Rule("look-alike", "A name no release had, close to the family meant.", "Use the family given."),
    sarif.Rule("needs-flag", "A family written only with a flag or feature.", "Enable it, or drop the panel."),
    sarif.Rule(
        "native-histogram-bucket",
        "A classic histogram's _bucket/_sum/_count where the scrape stores it as a native histogram.",
        "Query the family name (histogram_quantile, histogram_sum, histogram_count).",
    ),
    sarif.Rule(
        "or-constant-hides-empty", "An `or vector(0)` hides an empty side: a permanent constant.", "Fix the side."
    ),
    sarif.Rule(
        "scale-from-zero",
        "A scale-to-zero ScaledObject triggered only by series of the pods it scales: it never activates.",
        "Keep one replica, or trigger on series that exist without the pods.",
    ),
    sarif.Rule(
        "deprecated-name",
        "A name still written, in the window of a rename its producer declared (llm-d's endpoint picker).",
        "Move to the successor given before the old name is removed.",
    ),
    sarif.Rule(
        "label-renamed",
        "A matcher on the label a rename swapped (pod_name for endpoint_name).",
        "Match on the label given.",
    ),
    sarif.Rule(
        "meaning-changed",
        "A family that kept its name but changed what it measures between the releases of an upgrade.",
        "Re-read the panel or threshold with the new meaning (see the message).",
    ),
    sarif.Rule(
        "opencost-input",
        "OpenCost's inference cost (llm_*, not this exporter's) computed from vLLM families that release lacks or "
        "that it miscounts.",
        "Read the value with the caveat given, or compute the cost from the vLLM families directly.",
    ),
    sarif.Rule(
        NOT_JUDGED,
        "A query on an engine's names that the release tables could not judge (no --against for that engine, "
        "or another producer's name under its prefix).",
        "Add --against for the engine, or check the query live.",
    ),
    sarif.Rule("promql-error", "A query that does not parse or that Prometheus refuses.", "Fix the PromQL."),
    sarif.Rule("bad-file", "A file check cannot read, parse or recognise.", "Fix or drop the file."),
)
_LEVEL: dict[str, sarif.Level] = {"empty": "error", "error": "error", "warning": "warning", "allowed": "note"}


def findings(results: Sequence[Result], errors: Sequence[str], strict: bool = False) -> list[sarif.Finding]:
    """One SARIF result per query that is not ok, located at the line of the file that holds it; a query on an
    engine's names that could not be judged is a warning, an error with `strict`."""
    out = [sarif.Finding("bad-file", "error", e, _uri(e.split(":", 1)[0])) for e in errors]
    lines: dict[str, list[str]] = {}
    for r in results:
        level = _LEVEL.get(r.status)
        if r.status == "unjudged" and NOT_JUDGED in r.rules:
            level = "error" if strict else "warning"
        if level is None:
            continue
        rule = "promql-error" if r.status == "error" else (r.rules[0] if r.rules else "empty-query")
        path = r.query.source.split(" ")[0]
        message = f"{r.query.where}: {r.query.expr}: " + "; ".join(r.reasons)
        if r.fix:
            message += f"; fix: {r.fix}"
        out.append(sarif.Finding(rule, level, message, _uri(path), _line(path, r.query.written, lines)))
    return out


def write_sarif(results: Sequence[Result], errors: Sequence[str], out: TextIO, strict: bool = False) -> None:
    sarif.write("llm-exporter check", RULES, findings(results, errors, strict), out)


def _uri(path: str) -> str:
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return p.as_posix()


def _line(path: str, written: str, cache: dict[str, list[str]]) -> int | None:
    """The 1-based line where the query stands (as written, or as JSON encodes it), None when not found."""
    if path not in cache:
        try:
            cache[path] = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            cache[path] = []
    probes = [written.splitlines()[0] if written else "", json.dumps(written, ensure_ascii=False)[1:-1]]
    for probe in probes:
        for i, line in enumerate(cache[path]):
            if probe and probe in line:
                return i + 1
    return None
