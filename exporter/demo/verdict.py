"""The demo's last word: `llm-exporter diagnose` on the demo's own Prometheus, as Markdown to paste into an
incident channel. It judges with the demo's thresholds (the ones its rules were rendered with), over the
window the demo has run for."""

from __future__ import annotations

import math
import time

from exporter.demo.prometheus import DemoPrometheus
from exporter.diagnose import render
from exporter.diagnose.collect import read, rfc3339
from exporter.diagnose.limits import DEFAULT, Limits
from exporter.diagnose.promql import Scope
from exporter.diagnose.walk import ScopeError, walk
from exporter.sources.prometheus import HttpPrometheus, PrometheusError

NAMESPACE = "demo"


def paste(prom: DemoPrometheus, when: str) -> int:
    """Print the diagnosis of the demo's namespace now; its exit code (0 healthy, 1 findings, 2 unknown)."""
    limits = Limits.from_thresholds(prom.thresholds) if prom.thresholds is not None else DEFAULT
    at = time.time()
    seconds = max(60, math.ceil(at - prom.started))
    window = f"{seconds}s"
    print(f"\n---- {when}: llm-exporter diagnose --prometheus {prom.url} --namespace {NAMESPACE} --window {window} "
          "--output markdown (what you would paste into the incident channel) ----", flush=True)  # fmt: skip
    try:
        readings = read(HttpPrometheus(prom.url), Scope(NAMESPACE, "", window), at, limits)
        report = walk(readings, rfc3339(at - seconds), NAMESPACE)
    except (PrometheusError, ScopeError) as exc:
        print(f"llm-exporter diagnose: {exc}", flush=True)
        return 2
    print(render.markdown(report), flush=True)
    print(f"---- exit code {report.exit_code} ({report.status}) ----", flush=True)
    return report.exit_code
