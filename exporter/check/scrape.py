"""What the scrape does to an engine's histograms, read from the scrape configuration given to `check` (pure).

Prometheus 3 converts classic histograms to native ones with custom buckets (NHCB) when a scrape says
`convert_classic_histograms_to_nhcb: true` (globally or per job; Prometheus Operator: `spec.
convertClassicHistogramsToNHCB` on a ServiceMonitor, PodMonitor, ScrapeConfig or the Prometheus object). The
family is then stored under its own name and its `_bucket`, `_sum` and `_count` series are not stored, unless
`always_scrape_classic_histograms` (`scrapeClassicHistograms`) keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MONITORS = frozenset({"ServiceMonitor", "PodMonitor", "ScrapeConfig", "Prometheus", "PrometheusAgent"})


def is_scrape_config(doc: Any) -> bool:
    """A Prometheus configuration file or a Prometheus Operator object that sets how targets are scraped."""
    if not isinstance(doc, dict):
        return False
    return doc.get("kind") in MONITORS or isinstance(doc.get("scrape_configs"), list)


def converting(doc: Any, source: str) -> list[str]:
    """Where `doc` converts classic histograms to native ones, each as "FILE: what" (empty when nowhere)."""
    if not isinstance(doc, dict):
        return []
    if doc.get("kind") in MONITORS:
        spec = doc.get("spec") or {}
        name = (doc.get("metadata") or {}).get("name", "?")
        if _on(spec, "convertClassicHistogramsToNHCB", "scrapeClassicHistograms"):
            return [f"{source}: {doc['kind']} {name} sets convertClassicHistogramsToNHCB"]
        return []
    found = []
    glob = doc.get("global") or {}
    if _on(glob, "convert_classic_histograms_to_nhcb", "always_scrape_classic_histograms"):
        found.append(f"{source}: global convert_classic_histograms_to_nhcb")
    for job in doc.get("scrape_configs") or []:
        if isinstance(job, dict) and _on(job, "convert_classic_histograms_to_nhcb", "always_scrape_classic_histograms"):
            found.append(f"{source}: scrape job {job.get('job_name', '?')} sets convert_classic_histograms_to_nhcb")
    return found


def _on(settings: Mapping[str, Any], convert: str, keep_classic: str) -> bool:
    return settings.get(convert) is True and settings.get(keep_classic) is not True
