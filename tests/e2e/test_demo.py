"""The README's main command, in its short mode: real vLLM + exporter, live lines, the rename alarm."""

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
    live = [line for line in out.splitlines() if line.startswith("t=")]
    assert live and all("engine up 1" in line for line in live)
    assert re.search(r"burst done: 8 requests, TTFT p99 \d+\.\d\ds, queue drained to 0", out)
    assert (
        'llm_metric_present{metric="llm_kv_cache_usage_ratio",source="vllm:kv_cache_usage_perc"} 0  -> alert '
        "LLMMetricMissing" in out
    )
    assert "llm_engine_unmapped_metrics 1" in out
    # Debian's prometheus is part of the suite's set-up, so the demo evaluates the shipped rules
    assert "ALERT firing: LLMTimeToFirstTokenP99High{namespace=demo,model=tiny}" in out
