"""The Diagnosis row as Perses draws it seconds after a verdict began, as in the held demo: vLLM 0.32.0
(replayed from its recorded body) behind the demo's renaming proxy, the exporter's node role, a real Prometheus
evaluating the bundle's rules every second, the Perses server with its UI and headless Chromium. The demo's
silent rename makes `llm:diagnosis{verdict="telemetry.metric_missing"}` hold a few seconds before the demo
holds; the row must show it then, not a minute later."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from exporter.demo.proxy import RenamingProxy
from exporter.demo.run import RENAME
from exporter.demo.vllm_env import free_port
from tests.bundle import perses_ui
from tests.bundle.perses_scene import dashboard
from tests.bundle.replay import ReplayedVllm, fast_rules
from tests.bundle.servers import prometheus, query, serve_exporter, static_job, wait_for, wait_http

pytestmark = pytest.mark.slow

MISSING = 'llm:diagnosis{verdict="telemetry.metric_missing", metric="llm_kv_cache_usage_ratio"}'


# Chromium's virtual-time budget may end, on a loaded machine, before the table has drawn its rows (its header
# is there, with a column for each label of the series it holds): the row is rendered up to three times.
RENDERS = 3


def _shown(texts: dict[str, str]) -> bool:
    """The table has the verdict's line and the chart's legend names it."""
    row = texts["Verdicts holding now"]
    legend = texts["Verdicts by stage"]
    return (
        "telemetry.metric_missing" in row
        and "llm_kv_cache_usage_ratio" in row
        and "telemetry telemetry.metric_missing" in legend
    )


def _early_in_a_minute(latest: int = 20) -> None:
    """Sleep until the wall clock is 1 to `latest` seconds into a minute."""
    second = time.time() % 60
    if not 1 <= second <= latest:
        time.sleep((61 - second) % 60)


def test_a_verdict_seconds_old_is_in_the_diagnosis_row(tmp_path: Path) -> None:
    engine = ReplayedVllm()
    proxy = RenamingProxy(engine.url)  # the exporter and Prometheus read the engine through it, as in the demo
    target = {"url": proxy.url, "labels": {"namespace": "demo", "pod": "vllm-0"}}
    try:
        with ExitStack() as stack:
            config = {"engines": {"targets": [target]}, "gpu": {"enabled": "false"}}
            proc, url = serve_exporter(tmp_path, "node", "node", f"127.0.0.1:{free_port()}", config)
            wait_http(f"{url}/readyz", proc=stack.enter_context(proc))
            rules = [fast_rules(tmp_path / "rules.yaml")]
            jobs = [static_job("llm-exporter", [url])]
            prom = stack.enter_context(prometheus(tmp_path / "prom", jobs, rule_files=rules))
            perses = stack.enter_context(perses_ui.perses(tmp_path / "perses"))
            perses_ui.add_prometheus(perses, prom)
            page = perses_ui.publish(perses, perses_ui.rows(dashboard())[0][1], "diagnosis", start="3m")
            kv_present = 'llm_metric_present{metric="llm_kv_cache_usage_ratio"} == 1'
            wait_for(lambda: bool(query(prom, kv_present)), 60, "the KV cache series present before the rename")
            # early in a minute, so that the row below is drawn in the minute the verdict began: read at the
            # minute's start (Perses' default step), it would be the world before the rename
            _early_in_a_minute()
            proxy.rename(RENAME)
            wait_for(lambda: bool(query(prom, MISSING)), 30, "llm:diagnosis of the rename in Prometheus")
            texts = [perses_ui.panel_texts(perses_ui.dom(page))]
            while len(texts) < RENDERS and not _shown(texts[-1]):
                texts.append(perses_ui.panel_texts(perses_ui.dom(page)))
    finally:
        proxy.close()
        engine.close()
    assert _shown(texts[-1]), texts
