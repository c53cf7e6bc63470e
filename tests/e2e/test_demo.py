"""The README's main command, in its short mode: real vLLM + exporter + Prometheus 3, live lines, and the
rename served by the engine's /metrics seen in Prometheus and alerted on."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]


def _descendants(pid: int) -> set[int]:
    """The processes below `pid` (from /proc: each one's parent is the 4th field of its stat)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    """Those of `pids` still running (a zombie, ended but not yet reaped by its parent, is not)."""
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _held(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The demo's output up to its "holding" line, and the Prometheus URL that line names."""
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        held = re.search(r"holding for 600s: Prometheus on (http://\S+) ", line)
        if held:
            return "".join(lines), held[1]
    raise AssertionError("the demo ended without holding:\n" + "".join(lines[-40:]))


def test_demo_short_mode() -> None:
    """The short demo, held up after its verdicts (--hold), then ended as a terminal or kubectl would end it."""
    command = [sys.executable, "-m", "exporter", "demo", "--short", "--hold", "600"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            out, prometheus = _held(proc)
            # still up while held: the dashboard can be looked at (scripts/perses-screenshots.sh --prometheus)
            with urllib.request.urlopen(f"{prometheus}/api/v1/query?query=llm_engine_up", timeout=10) as answer:
                assert json.load(answer)["data"]["result"][0]["value"][1] == "1"
            # the dashboard's Diagnosis row says what diagnose said first after the rename (llm:diagnosis)
            with urllib.request.urlopen(f"{prometheus}/api/v1/query?query=llm%3Adiagnosis", timeout=10) as answer:
                diagnosis = [r["metric"] for r in json.load(answer)["data"]["result"]]
            children = _descendants(proc.pid)
            assert children  # vLLM and Prometheus
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=120) == 128 + signal.SIGTERM
            deadline = time.monotonic() + 30
            while _alive(children) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert not _alive(children), "vLLM or Prometheus outlived the demo"
        finally:
            proc.kill()
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
    # diagnose after the rename names the missing series first; the row holds that verdict, where and what
    first = "| 1 | telemetry | llm_kv_cache_usage_ratio is missing on demo/vllm-0: vllm 0.32.0 does not expose "
    assert first in out[out.index("---- after the rename: llm-exporter diagnose") :]
    where = [(d["verdict"], d["namespace"], d["pod"], d["metric"], d["source"]) for d in diagnosis]
    series = ("llm_kv_cache_usage_ratio", "vllm:kv_cache_usage_perc")
    assert where == [("telemetry.metric_missing", "demo", "vllm-0", *series)]
