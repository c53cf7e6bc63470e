"""Every check of the registry has its runbook section, and the alerts' runbook links land on theirs."""

from __future__ import annotations

import re
from pathlib import Path

from exporter.audit.checks import CHECKS

RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "runbook.md"


def test_every_check_has_a_runbook_section_saying_its_severity() -> None:
    text = RUNBOOK.read_text(encoding="utf-8")
    sections = dict(re.findall(r"^#### ([a-z0-9-]+)\n\n(.*?)(?=^#|\Z)", text, flags=re.M | re.S))
    assert list(sections) == [c.id for c in CHECKS]
    for check in CHECKS:
        assert sections[check.id].startswith("*advisory") == (check.severity == "info"), check.id
