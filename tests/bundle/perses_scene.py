"""The scene the Perses dashboard is looked at in: the replayed vLLM 0.32.0 engine and LiteLLM 1.110.2 proxy
(their recorded real /metrics bodies, tests/bundle/replay.py) behind the exporter's node role, scraped by a
real Prometheus every second with the bundle's rules, and the Perses server with its UI on that Prometheus.

`python -m tests.bundle.perses_scene DIR` (scripts/perses-screenshots.sh) writes a PNG of each dashboard row
to DIR, as docs/dashboard.md shows them."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import yaml

from exporter.bundle import render
from exporter.demo.vllm_env import free_port
from tests.bundle import perses_ui
from tests.bundle.replay import ReplayedLitellm, ReplayedVllm, fast_rules, node_config
from tests.bundle.servers import prometheus, query, serve_exporter, static_job, wait_for, wait_http

DASHBOARD = "dashboards/overview.perses.yaml"
# long enough for the 1m rate windows of the panels to draw a line over most of the last 2 minutes
WARM_S = 100.0


def dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(render.outputs()[DASHBOARD])
    return doc


@contextmanager
def scene(tmp: Path) -> Iterator[str]:
    """Everything running, Prometheus warm; yields the Perses server's URL (project llm, its datasource set)."""
    engine, gateway = ReplayedVllm(), ReplayedLitellm()
    try:
        with ExitStack() as stack:
            proc, url = serve_exporter(tmp, "node", "node", f"127.0.0.1:{free_port()}", node_config(engine, gateway))
            wait_http(f"{url}/readyz", proc=stack.enter_context(proc))
            jobs = [static_job("llm-exporter", [url]), static_job("vllm", [engine.url])]
            rules = [fast_rules(tmp / "rules.yaml")]  # the bundle's recording rules feed half the panels
            prom = stack.enter_context(prometheus(tmp / "prom", jobs, rule_files=rules))
            started = time.monotonic()
            wait_for(lambda: bool(query(prom, "llm_engine_up")), 60, "llm_engine_up in Prometheus")
            perses = stack.enter_context(perses_ui.perses(tmp / "perses"))
            perses_ui.add_prometheus(perses, prom)
            time.sleep(max(0.0, WARM_S - (time.monotonic() - started)))
            yield perses
    finally:
        engine.close()
        gateway.close()


@contextmanager
def on(prometheus_url: str, tmp: Path) -> Iterator[str]:
    """The Perses server with its UI on a Prometheus already running (the demo's, `llm-exporter demo --hold`)."""
    with perses_ui.perses(tmp / "perses") as perses:
        perses_ui.add_prometheus(perses, prometheus_url)
        yield perses


def main(out: Path, prometheus_url: str = "", start: str = "2m") -> None:
    out.mkdir(parents=True, exist_ok=True)
    with TemporaryDirectory() as tmp, on(prometheus_url, Path(tmp)) if prometheus_url else scene(Path(tmp)) as perses:
        for i, (title, alone, height) in enumerate(perses_ui.rows(dashboard()), start=1):
            page = perses_ui.publish(perses, alone, f"row-{i}", start=start)
            perses_ui.screenshot(page, out / f"row-{i:02d}.png", height=height)
            print(f"row-{i:02d}.png: {title}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="PNGs of each row of the Perses dashboard")
    parser.add_argument("out", type=Path)
    parser.add_argument("--prometheus", default="", help="a running Prometheus (the demo's) instead of the replay")
    parser.add_argument("--start", default="2m", help="the time range shown, back from now (Perses' start=)")
    args = parser.parse_args()
    main(args.out, args.prometheus, args.start)
