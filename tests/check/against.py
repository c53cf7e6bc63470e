"""The offline checker as the tests of `check --against` drive it: in process on named releases, or as the
command, on the corpus of dashboards and rule files stored as found (tests/fixtures/check_corpus)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from exporter.check.inputs import file_queries
from exporter.check.offline import OfflineChecker, parse_target

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "check_corpus"


def offline(*targets: str, converting: tuple[str, ...] = ()) -> OfflineChecker:
    return OfflineChecker([parse_target(t) for t in targets], converting)


def verdicts(checker: OfflineChecker, name: str) -> dict[str, str]:
    return {r.query.where: r.status for r in (checker.check(q) for q in file_queries(CORPUS / name))}


def not_ok(checker: OfflineChecker, name: str) -> dict[str, str]:
    return {where: status for where, status in verdicts(checker, name).items() if status != "ok"}


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "check", *args], capture_output=True, text=True, timeout=120, check=False,
        cwd=cwd,
    )  # fmt: skip
