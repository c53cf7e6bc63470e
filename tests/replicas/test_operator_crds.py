"""The serving operators' CRDs the real-control-plane tests serve are the published files, unmodified."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "operator_crds"


def test_each_crd_is_the_published_file_its_readme_names() -> None:
    readme = (CRDS / "README.md").read_text()
    sums = dict((name, digest) for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, flags=re.MULTILINE))
    listed = set(re.findall(r"^\| (\S+\.yaml) \|", readme, flags=re.MULTILINE))
    files = {p.name for p in CRDS.glob("*.yaml")}
    assert files == set(sums) == listed
    for name, digest in sums.items():
        assert hashlib.sha256((CRDS / name).read_bytes()).hexdigest() == digest, name
