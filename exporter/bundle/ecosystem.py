"""The bundle's objects for the tools around Prometheus, made from the same sources: the Sloth specs and Pyrra
objects of the SLOs (deploy/slo/, exporter/bundle/slo.py) and the kube-prometheus mixin's data
(mixin/generated/, exporter/bundle/mixin.py). The `alerts` package is the repository's: callers make it
importable (exporter/bundle/render.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from exporter.bundle import mixin, shipped, slo, slo_indicators

ROOT = Path(__file__).resolve().parents[2]


def slo_out(files: dict[str, str]) -> dict[str, str]:
    """What `--slo --out` writes, by file name: deploy/slo/'s files, `sloth-<engine>.yaml`, `pyrra-<engine>.yaml`."""
    prefix = slo.FOLDER + "/"
    return {rel.removeprefix(prefix).replace("/", "-"): text for rel, text in files.items() if rel.startswith(prefix)}


def slo_files(root: Path = ROOT) -> dict[str, str]:
    """deploy/slo/: the Sloth specs and Pyrra objects of the thresholds, per engine (exporter/bundle/slo.py)."""
    from alerts.thresholds import DEFAULT
    from exporter.engines.registry import ENGINES

    return slo.files(DEFAULT, list(ENGINES.values()), slo_indicators.load_buckets(root))


def mixin_files(dashboards: dict[str, str]) -> dict[str, str]:
    """mixin/generated/: the rules with the mixin's placeholder selector, the alert thresholds, the dashboards."""
    from alerts import formats, rules
    from alerts.thresholds import DEFAULT

    t = dataclasses.replace(DEFAULT, selector=mixin.SELECTOR)
    thresholds = {a.name: (a.op, a.threshold) for a in rules.alerts(t) if a.threshold is not None}
    return mixin.files(formats.rule_groups(t), thresholds, dashboards)


def slo_out_files(root: Path | None) -> dict[str, str]:
    """`--slo --out`: rendered from the checkout `root`, or (None) the shipped copy."""
    return shipped.slo_files() if root is None else slo_out(slo_files(root))
