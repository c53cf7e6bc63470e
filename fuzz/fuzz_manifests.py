"""Coverage-guided fuzzing of the audit on manifests: any text is audited or a ManifestError, nothing else.

    .venv/bin/python fuzz/fuzz_manifests.py fuzz/corpus/manifests -dict=fuzz/manifests.dict -max_total_time=600

Each input is decoded as UTF-8 (errors replaced), read as multi-document YAML, sorted into the checks' model
and every engine workload found is audited by every check. Any exception but ManifestError is a crash, and
so is a check that could not evaluate (an object the normalised model let through in a shape no check expects).
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, installed or not

with atheris.instrument_imports(include=["exporter.audit", "yaml"]):
    from exporter.audit import inventory, manifests, run


def TestOneInput(data: bytes) -> None:  # noqa: N802 - the name atheris and libFuzzer use
    text = data.decode("utf-8", errors="replace")
    inv = inventory.Inventory()
    try:
        for doc in manifests.documents(text, "fuzz.yaml"):
            inventory.add(inv, doc.obj, doc.source)
    except manifests.ManifestError as exc:
        if not str(exc).startswith("fuzz.yaml"):
            raise AssertionError(f"ManifestError without the file: {exc}") from exc
    for finding in run.audit(run.engines(inv.workloads), inv.around):
        record = finding.record()
        if finding.outcome.detail.startswith("cannot evaluate"):
            raise AssertionError(f"check {record['check']} failed on {record['kind']} {record['name']}")


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
