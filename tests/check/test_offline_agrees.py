"""Offline `check --against` agrees with live `check` on the same files: a real Prometheus 3 scraping vLLM
0.32.0 replayed from its recorded body (tests/fixtures/vllm/0.32.0.prom) and SGLang 0.5.23's body generated
from its release table (tests/engines/engine_bodies.py).

Every query the tables judge must get the same answer both ways: data offline ⇔ data live; empty (or
flag-gated: no flag is set here) offline ⇒ empty live; an `or vector(0)` warning in both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter.check import scrape
from exporter.check.evaluate import Checker
from exporter.check.inputs import BadFileError, file_queries, load_documents
from exporter.check.offline import OfflineChecker, parse_target
from exporter.sources.prometheus import HttpPrometheus
from tests.bundle.replay import FakeEngine
from tests.bundle.servers import Served, prometheus, query, static_job, wait_for
from tests.engines.engine_bodies import body

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "check_corpus"
LINTED = [
    "sglang_num_running_reqs",
    "sglang:num_running_reqs",
    "rate(sglang:num_retracted_reqs_total[5m])",
    "rate(sglang:num_retracted_requests_total[5m])",
    "rate(vllm:prompt_tokens[5m])",
    "rate(vllm:prompt_tokens_total[5m])",
    "rate(vllm_prompt_tokens_total[5m])",
    "rate(vllm:e2e_request_latency_seconds[5m])",
    "rate(vllm:nixl_num_failed_transfers_total[5m])",
    "sglang:hicache_host_used_tokens",
    "sum(vllm:gpu_cache_usage_perc) or vector(0)",
    "sum(vllm:kv_cache_usage_perc) or vector(0)",
    "vllm:num_requests_running and on() sglang:num_running_reqs",  # without on(): label sets never join
    "vllm:gpu_cache_usage_perc or sglang:num_running_reqs",
    "vllm:num_requests_waiting > 3",
    "vllm:num_aborted_requests",  # never a vLLM name; SGLang has sglang:num_aborted_requests_total
]


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    vllm = FakeEngine()
    sglang = Served(lambda path: (200, body("sglang", "0.5.23")) if path == "/metrics" else (404, ""))
    try:
        jobs = [static_job("vllm", [vllm.url]), static_job("sglang", [sglang.url])]
        with prometheus(tmp_path_factory.mktemp("prom"), jobs) as url:
            wait_for(lambda: bool(query(url, "count_over_time(vllm:request_success_total[1m]) > 3")), 60, "scrapes")
            wait_for(lambda: bool(query(url, "count_over_time(sglang:num_running_reqs[1m]) > 3")), 60, "scrapes")
            yield url
    finally:
        vllm.close()
        sglang.close()


def lint_file(tmp_path: Path) -> Path:
    path = tmp_path / "lints.rules.json"
    rules = [{"record": f"r{i}", "expr": expr} for i, expr in enumerate(LINTED)]
    path.write_text(json.dumps({"groups": [{"name": "lints", "rules": rules}]}))
    return path


def test_offline_verdicts_agree_with_live_check(prom: str, tmp_path: Path) -> None:
    live = Checker(HttpPrometheus(prom))
    offline = OfflineChecker([parse_target("vllm==0.32.0"), parse_target("sglang==0.5.23")])
    files = [p for p in sorted(CORPUS.iterdir()) if p.suffix in (".json", ".yaml")] + [lint_file(tmp_path)]
    judged = 0
    disagreements = []
    for path in files:
        try:
            queries = file_queries(path, lookup=HttpPrometheus(prom))
        except BadFileError:  # the corpus's invalid adapter sample: both modes report it as bad input
            continue
        for q in queries:
            mine = offline.check(q)
            if mine.status == "unjudged":
                continue
            judged += 1
            theirs = live.check(q)
            expected = {"ok": {"ok"}, "empty": {"empty"}, "allowed": {"empty"}, "warning": {"warning"}}[mine.status]
            if theirs.status not in expected:
                disagreements.append((path.name, q.where, q.expr, mine.status, theirs.status, theirs.reasons))
    assert disagreements == []
    assert judged > 100
    # the lints read the same in both modes
    by_expr = {q.expr: live.check(q) for q in file_queries(lint_file(tmp_path))}
    assert by_expr["sglang_num_running_reqs"].rules == ["wrong-separator"]
    assert by_expr["sglang_num_running_reqs"].fix == "sglang:num_running_reqs"
    assert by_expr["rate(vllm:prompt_tokens[5m])"].rules == ["counter-without-total"]
    assert by_expr["rate(vllm:nixl_num_failed_transfers_total[5m])"].rules == ["needs-flag"]
    assert "needs the NIXL KV connector" in by_expr["rate(vllm:nixl_num_failed_transfers_total[5m])"].reasons[0]
    hidden = by_expr["sum(vllm:gpu_cache_usage_perc) or vector(0)"]
    assert (hidden.status, hidden.rules) == ("warning", ["or-constant-hides-empty"])
    assert by_expr["sum(vllm:kv_cache_usage_perc) or vector(0)"].status == "ok"
    separator = by_expr["sglang_num_running_reqs"].reasons[0]
    assert separator == (
        "sglang_num_running_reqs: never present in the last 7d: no SGLang release exposes sglang_num_running_reqs; "
        "the name is sglang:num_running_reqs; the underscore form only ever came from Dynamo re-publishing "
        "SGLang's metrics, fixed in Dynamo in 2026-01"
    )
    aborted = by_expr["vllm:num_aborted_requests"].reasons[0]
    assert "similar names present" in aborted and "sglang:" not in aborted, aborted


def test_native_histograms_read_the_same_both_ways(tmp_path: Path) -> None:
    # the scrape converts vLLM's classic histograms to native ones: no _bucket series in Prometheus
    expr = "histogram_quantile(0.9, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))"
    config = tmp_path / "prometheus.yml"
    vllm = FakeEngine()
    try:
        job = {**static_job("vllm", [vllm.url]), "convert_classic_histograms_to_nhcb": True}
        config.write_text(json.dumps({"scrape_configs": [job]}))
        with prometheus(tmp_path / "prom", [job]) as url:
            wait_for(lambda: bool(query(url, "count_over_time(vllm:request_success_total[1m]) > 3")), 60, "scrapes")
            (q,) = file_queries(_rules(tmp_path, expr))
            live = Checker(HttpPrometheus(url)).check(q)
    finally:
        vllm.close()
    converting = [c for doc in load_documents(config) for c in scrape.converting(doc, "prometheus.yml")]
    offline = OfflineChecker([parse_target("vllm==0.32.0")], converting).check(q)
    assert (live.status, live.rules) == (offline.status, offline.rules) == ("empty", ["native-histogram-bucket"])
    assert (
        live.fix == offline.fix == ("histogram_quantile(0.9, sum by (le) (rate(vllm:e2e_request_latency_seconds[5m])))")
    )


def _rules(tmp_path: Path, expr: str) -> Path:
    path = tmp_path / "one.rules.json"
    path.write_text(json.dumps({"groups": [{"name": "g", "rules": [{"record": "r", "expr": expr}]}]}))
    return path


def test_sarif_from_live_check(prom: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "check", "--prometheus", prom, "--output", "sarif",
         str(lint_file(tmp_path))],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    got = sorted({(r["ruleId"], r["level"]) for r in run["results"]})
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in run["results"])
    assert got == [
        ("counter-without-total", "error"),
        ("empty-query", "error"),  # vllm:num_aborted_requests: never present, no table knows it
        ("family-name", "error"),
        ("look-alike", "error"),
        ("needs-flag", "error"),  # live, the panel is empty: no flag is set here
        ("or-constant-hides-empty", "warning"),
        ("wrong-separator", "error"),
    ]
