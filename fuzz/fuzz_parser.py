"""Coverage-guided fuzzing of the exposition parser: any body parses or raises ParseError, nothing else.

    .venv/bin/python fuzz/fuzz_parser.py fuzz/corpus/parser -max_total_time=600    (see fuzz/README.md)

Each input is decoded as UTF-8 (errors replaced, as the engine collector decodes a fetched body) and fed to
`parser.parse` with the mapping's wanted names and with a few short ones, to `parser.parse_labels`, and to
`mapping.map_body`. Any exception but ParseError is a crash: libFuzzer saves the input as `crash-*`.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, installed or not

with atheris.instrument_imports(include=["exporter"]):
    from exporter.engines import mapping, parser, releases, vllm

RELEASES = releases.load("vllm")
IDENTITY = {"namespace": "n", "pod": "p", "engine": "vllm"}
WANTED = mapping.wanted_samples(vllm.SPEC)
SHORT = frozenset({"x", "a", "vllm:x", "vllm:x_bucket"})  # names a fuzzer can reach without a dictionary


def TestOneInput(data: bytes) -> None:  # noqa: N802 - the name atheris and libFuzzer use
    body = data.decode("utf-8", errors="replace")
    for wanted in (WANTED, SHORT):
        with contextlib.suppress(parser.ParseError):
            parser.parse(body, wanted, "vllm:")
    with contextlib.suppress(parser.ParseError):
        parser.parse_labels(body)
    with contextlib.suppress(parser.ParseError):
        mapping.map_body(body, IDENTITY, None, RELEASES, engine=vllm.SPEC)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
