"""Coverage-guided fuzzing of the config loader: any text is a Config or a ConfigError, nothing else.

    .venv/bin/python fuzz/fuzz_config.py fuzz/corpus/config -dict=fuzz/config.dict -max_total_time=600

Each input is decoded as UTF-8 (errors replaced) and fed to `config.parse`. PyYAML is instrumented too, so
the fuzzer is guided through YAML's syntax (tags, anchors, flow and block collections) into the loader's
type checks. Any exception but ConfigError, or a ConfigError without a list of non-empty string errors,
is a crash: libFuzzer saves the input as `crash-*`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, installed or not

with atheris.instrument_imports(include=["exporter", "yaml"]):
    from exporter import config


def TestOneInput(data: bytes) -> None:  # noqa: N802 - the name atheris and libFuzzer use
    text = data.decode("utf-8", errors="replace")
    try:
        result = config.parse(text, source="fuzz.yaml")
    except config.ConfigError as exc:
        if not exc.errors or not all(isinstance(error, str) and error for error in exc.errors):
            raise AssertionError(f"ConfigError without proper errors: {exc.errors!r}") from exc
        return
    if not isinstance(result, config.Config):
        raise AssertionError(f"parse returned {type(result).__name__}")


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
