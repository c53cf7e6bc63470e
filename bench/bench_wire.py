"""Bytes on the wire and CPU per scrape: text format vs OpenMetrics, plain vs gzip, ours vs prometheus_client.

    python bench/bench_wire.py [--targets 100] [--repeat 20]

The exposition: the recorded vLLM 0.32.0 body grown to ~100 KB (as bench_parse.py grows it) mapped for
`--targets` engine pods (the node of issue 15: 100 targets, ~6 MB plain per scrape), plus the exporter's own
families. Timed: rendering that exposition from the families (ours), gzip at levels 1 and 6 on top, and
prometheus_client rendering the same families (its `generate_latest` and OpenMetrics `generate_latest`) from
its own Metric objects built once beforehand, so that only the writers are compared.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import time
from collections.abc import Callable, Iterable

from bench_parse import grown
from prometheus_client import exposition as pc_text
from prometheus_client.core import CollectorRegistry, Metric
from prometheus_client.openmetrics import exposition as pc_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from timing import timings

from exporter.engines import mapping, vllm
from exporter.engines.collector import Outcome, build_families
from exporter.engines.releases import load
from exporter.engines.targets import from_url
from exporter.exposition import Family, render, render_openmetrics


def families(targets: int, body: str) -> list[Family]:
    releases = load("vllm")
    outcomes = []
    for i in range(targets):
        target = from_url(f"http://10.0.{i // 250}.{i % 250}:8000", "ml", f"vllm-{i}", "vllm")
        mapped = mapping.map_body(
            body, target.identity, "0.32.0", releases, mapping.Limits(max_series=10**6), engine=vllm.SPEC
        )
        outcomes.append(Outcome(target, mapped, "", 0.01))
    return build_families(outcomes)


class Frozen:
    """A prometheus_client collector serving fixed Metric objects (the same families, its way)."""

    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return self.metrics


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    return statistics.median(timings(fn, repeat, time.process_time)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    fams = families(args.targets, grown(100_000))
    text, om = render(fams), render_openmetrics(fams)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Frozen(list(text_string_to_metric_families(text))))
    n = args.repeat
    rows: list[tuple[str, Callable[[], bytes]]] = [
        ("ours text", lambda: render(fams).encode()),
        ("ours text + gzip 1", lambda: gzip.compress(render(fams).encode(), 1, mtime=0)),
        ("ours text + gzip 6", lambda: gzip.compress(render(fams).encode(), 6, mtime=0)),
        ("ours OpenMetrics", lambda: render_openmetrics(fams).encode()),
        ("ours OpenMetrics + gzip 1", lambda: gzip.compress(render_openmetrics(fams).encode(), 1, mtime=0)),
        ("prometheus_client text", lambda: pc_text.generate_latest(registry)),
        ("prometheus_client text + gzip", lambda: gzip.compress(pc_text.generate_latest(registry))),
        ("prometheus_client OpenMetrics", lambda: pc_openmetrics.generate_latest(registry)),  # type: ignore[no-untyped-call]
    ]
    samples = sum(len(f.samples) for f in fams)
    print(f"{args.targets} targets, {samples:,} samples; text {len(text):,} B, OpenMetrics {len(om):,} B")
    print(f"{'writer':>32} {'bytes':>12} {'ratio':>6} {'CPU ms':>8}")
    for name, fn in rows:
        size = len(fn())
        print(f"{name:>32} {size:>12,} {size / len(text):6.3f} {median_ms(fn, n):8.1f}")


if __name__ == "__main__":
    main()
