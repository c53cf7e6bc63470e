"""`python -m exporter.bundle [--check]`: regenerate the bundle, or fail listing drifted files."""

from __future__ import annotations

import argparse
import sys

from exporter.bundle import render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m exporter.bundle", description=__doc__)
    render.add_arguments(parser)
    return render.run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
