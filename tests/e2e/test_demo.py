"""The README's main command, in its short mode: real vLLM + exporter + Prometheus 3, live lines, and the
rename served by the engine's /metrics seen in Prometheus and alerted on."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]


def test_demo_short_mode() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "exporter", "demo", "--short"], capture_output=True, text=True, timeout=1400, check=False
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr[-2000:]
    # no engine named in the demo's config: the exporter detects vLLM and asks its version
    assert "the exporter found vllm 0.32.0 (asked from the engine)" in out
    live = [line for line in out.splitlines() if line.startswith("t=")]
    assert live and all("engine up 1" in line for line in live)
    assert re.search(r"burst done: 8 requests, TTFT p99 \d+\.\d\ds, queue drained to 0", out)
    assert (
        'llm_metric_present{metric="llm_kv_cache_usage_ratio",source="vllm:kv_cache_usage_perc"} 0  -> alert '
        "LLMMetricMissing" in out
    )
    assert "llm_engine_unmapped_metrics 1" in out
    # the demo's Prometheus 3 (built by scripts/build-peers.sh) evaluates the shipped rules
    assert "ALERT firing: LLMTimeToFirstTokenP99High{namespace=demo,model=tiny}" in out
    # the rename is served: what Prometheus scraped before and after it
    kv = "Prometheus: the dashboard's KV cache usage panel: max by (namespace, pod, model) (llm_kv_cache_usage_ratio"
    before = out.index(kv)
    rename = out.index("a silent rename: vLLM's /metrics now serves vllm:kv_cache_usage_perc as ")
    assert re.match(r"[^\n]* = 1 series\n", out[before:])
    after = out.index(kv, rename)
    assert re.match(r"[^\n]* = no data\n", out[after:])
    assert out.index("ALERT firing: LLMMetricMissing{namespace=demo", rename) < after
    assert "Prometheus: a query on vLLM's own name: vllm:kv_cache_usage_perc = no data" in out[after:]
    assert "Prometheus: the other llm_* series: count(llm_requests_running) = 1 series" in out[after:]
