"""Results as text for people or JSON for CI: one record per query (file, location, expr, status, reasons, fix)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from exporter.check.evaluate import Result

LABELS = {"ok": "ok   ", "empty": "EMPTY", "allowed": "note ", "error": "ERROR"}


def record(result: Result) -> dict[str, Any]:
    return {
        "file": result.query.source,
        "location": result.query.where,
        "expr": result.query.expr,
        "status": result.status,
        "reasons": result.reasons,
        "fix": result.fix,
    }


def counts(results: Sequence[Result]) -> dict[str, int]:
    return {s: sum(r.status == s for r in results) for s in LABELS}


def write_json(results: Sequence[Result], errors: Sequence[str], out: TextIO) -> None:
    json.dump(
        {"results": [record(r) for r in results], "errors": list(errors), "counts": counts(results)}, out, indent=1
    )
    out.write("\n")


def write_text(
    results: Sequence[Result], errors: Sequence[str], out: TextIO, verbose: bool = False, fixes: bool = False
) -> None:
    for error in errors:
        print(f"ERROR {error}", file=out)
    for r in results:
        if r.status == "ok" and not verbose:
            continue
        print(f"{LABELS[r.status]} {r.query.source}: {r.query.where}", file=out)
        if r.status != "ok":
            print(f"      {r.query.expr}", file=out)
        for reason in r.reasons:
            print(f"      - {reason}", file=out)
        if fixes and r.fix is not None:
            print(f"      fix: {r.fix}", file=out)
    n = counts(results)
    files = len({r.query.source for r in results})
    print(
        f"{len(results)} queries in {files} files: {n['ok']} ok, {n['empty']} empty, "
        f"{n['error']} errors, {n['allowed']} empty as expected"
        + (f"; {len(errors)} files not checked" if errors else ""),
        file=out,
    )
