"""Moved to `exporter.check`; kept so existing imports keep working."""

from exporter.check.cli import BUNDLE, ROOT, add_arguments, run
from exporter.check.evaluate import ALLOW_EMPTY, SPARSE, Checker, Result
from exporter.check.report import write_text

__all__ = [
    "ALLOW_EMPTY",
    "BUNDLE",
    "ROOT",
    "SPARSE",
    "Checker",
    "Result",
    "add_arguments",
    "report",
    "run",
    "write_text",
]


def report(results: list[Result], out: object, verbose: bool = False) -> None:
    write_text(results, [], out, verbose)  # type: ignore[arg-type]
