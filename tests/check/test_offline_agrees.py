"""Offline `check --against` agrees with live `check` on the same files: a real Prometheus 3 scraping vLLM
0.32.0 replayed from its recorded body (tests/fixtures/vllm/0.32.0.prom) and SGLang 0.5.23's, TGI 3.3.7's and
LMDeploy 0.16.0's bodies generated from their release tables (tests/engines/engine_bodies.py).

Every query the tables judge must get the same answer both ways: data offline ⇔ data live; empty (or
flag-gated: no flag is set here) offline ⇒ empty live; an `or vector(0)` warning in both.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from exporter.check import scrape
from exporter.check.evaluate import Checker
from exporter.check.inputs import BadFileError, Query, file_queries, load_documents
from exporter.check.offline import OfflineChecker, parse_target
from exporter.sources.prometheus import HttpPrometheus
from tests.bundle.replay import ReplayedVllm
from tests.bundle.servers import Served, prometheus, query, static_job, wait_for
from tests.engines.engine_bodies import body

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "check_corpus"
SAMPLE = re.compile(r"^([^#\s]\S*(?:\{[^}]*\})?) (\S+)$", re.MULTILINE)
LMDEPLOY_MODEL = "/share/datasets/public_models/Meta-Llama-3-8B-Instruct"
# the engines the corpus and LINTED query, each served live below: a subset on purpose (nothing there queries
# trtllm-serve or llama.cpp)
TARGETS = ("vllm==0.32.0", "sglang==0.5.23", "tgi==3.3.7", "lmdeploy==0.16.0")
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


def tgi_body() -> str:
    """TGI 3.3.7's body with its `method` label as TGI writes it: each batch family for prefill and for decode
    (`"method" => "prefill"` / `"decode"` in backends/v3/src/backend.rs); the TGI dashboard filters on both."""
    lines = []
    for line in body("tgi", "3.3.7").splitlines():
        if 'method="x"' in line:
            lines += [line.replace('method="x"', f'method="{m}"') for m in ("prefill", "decode")]
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def scraped(url: str, name: str) -> bool:
    return bool(query(url, f"count_over_time({name}[1m]) > 3"))


def growing(text: str) -> Callable[[str], tuple[int, str]]:
    """Serve `text` with every sample growing at each scrape, as an engine under load: rates are not zero
    (a dashboard's `> 0` filter keeps them)."""
    scrapes = [0]

    def answer(path: str) -> tuple[int, str]:
        if path != "/metrics":
            return 404, ""
        scrapes[0] += 1
        return 200, SAMPLE.sub(lambda m: f"{m.group(1)} {float(m.group(2)) * scrapes[0]}", text)

    return answer


@pytest.fixture(scope="module")
def proms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Two Prometheus servers: vLLM, SGLang and TGI in one; LMDeploy alone in the other, since its dashboard
    filters on the model it was written for and the vLLM dashboards' `label_values(model_name)` would pick it."""
    vllm = ReplayedVllm()
    served = {
        "sglang": body("sglang", "0.5.23"),
        "tgi": tgi_body(),
        # this LMDeploy serves the model its own dashboard was written for
        "lmdeploy": body("lmdeploy", "0.16.0").replace('model_name="tiny"', f'model_name="{LMDEPLOY_MODEL}"'),
    }
    engines = {name: Served(growing(text)) for name, text in served.items()}
    try:
        jobs = [static_job("vllm", [vllm.url]), static_job("sglang", [engines["sglang"].url])]
        # Kubernetes discovery labels TGI's series with its container, which the TGI dashboard's variable reads
        jobs.append(static_job("tgi", [engines["tgi"].url], {"container": "tgi-0"}))
        with (
            prometheus(tmp_path_factory.mktemp("prom"), jobs) as url,
            prometheus(
                tmp_path_factory.mktemp("prom-lmdeploy"), [static_job("lmdeploy", [engines["lmdeploy"].url])]
            ) as lmdeploy,
        ):
            probes = [(url, "vllm:request_success_total"), (url, "sglang:num_running_reqs"),
                      (url, "tgi_request_count"), (lmdeploy, "lmdeploy:num_requests_running")]  # fmt: skip
            for at, probe in probes:
                wait_for(partial(scraped, at, probe), 60, f"scrapes of {probe}")
            yield {"main": url, "lmdeploy": lmdeploy}
    finally:
        vllm.close()
        for engine in engines.values():
            engine.close()


@pytest.fixture(scope="module")
def prom(proms: dict[str, str]) -> str:
    return proms["main"]


def lint_file(tmp_path: Path) -> Path:
    path = tmp_path / "lints.rules.json"
    rules = [{"record": f"r{i}", "expr": expr} for i, expr in enumerate(LINTED)]
    path.write_text(json.dumps({"groups": [{"name": "lints", "rules": rules}]}))
    return path


AGREES = {"ok": {"ok"}, "empty": {"empty"}, "allowed": {"empty"}, "warning": {"warning"}}
"""Offline verdict → the live statuses that agree with it (flag-gated offline: no flag is set here)."""


def compare(path: Path, offline: OfflineChecker, url: str) -> tuple[int, list[tuple[str, ...]]]:
    """How many queries of `path` the tables judge, and those on which live check says otherwise."""
    live = Checker(HttpPrometheus(url))
    judged, disagreements = 0, list[tuple[str, ...]]()
    for q in file_queries(path, lookup=HttpPrometheus(url)):
        mine = offline.check(q)
        if mine.status == "unjudged":
            continue
        judged += 1
        theirs = live.check(q)
        if theirs.status not in AGREES[mine.status]:
            disagreements.append((path.name, q.where, q.expr, mine.status, theirs.status, "; ".join(theirs.reasons)))
    return judged, disagreements


def test_offline_verdicts_agree_with_live_check(proms: dict[str, str], tmp_path: Path) -> None:
    offline = OfflineChecker([parse_target(t) for t in TARGETS])
    files = [p for p in sorted(CORPUS.iterdir()) if p.suffix in (".json", ".yaml")] + [lint_file(tmp_path)]
    judged, disagreements = 0, list[tuple[str, ...]]()
    for path in files:
        url = proms["lmdeploy" if path.name.startswith("lmdeploy") else "main"]
        try:
            n, wrong = compare(path, offline, url)
        except BadFileError:  # the corpus's invalid adapter sample: both modes report it as bad input
            continue
        judged += n
        disagreements += wrong
    assert disagreements == []
    assert judged > 180
    # the lints read the same in both modes
    live = Checker(HttpPrometheus(proms["main"]))
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
    vllm = ReplayedVllm()
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


def test_vllm_0_27_1_recorded_body_agrees(tmp_path: Path) -> None:
    # a second recorded release: the vLLM files of the corpus judged on 0.27.1 both ways
    recorded = Path(__file__).resolve().parents[1] / "fixtures" / "vllm" / "0.27.1.prom"
    engine = Served(growing(recorded.read_text()))
    offline = OfflineChecker([parse_target("vllm==0.27.1")])
    judged, disagreements = 0, list[tuple[str, ...]]()
    try:
        with prometheus(tmp_path / "prom", [static_job("vllm", [engine.url])]) as url:
            wait_for(partial(scraped, url, "vllm:request_success_total"), 60, "scrapes")
            for path in sorted(CORPUS.glob("*vllm*")):
                n, wrong = compare(path, offline, url)
                judged += n
                disagreements += wrong
    finally:
        engine.close()
    assert disagreements == []
    assert judged > 70


def test_live_lints_on_autoscalers_and_variables(prom: str, tmp_path: Path) -> None:
    live = Checker(HttpPrometheus(prom))
    zero = tmp_path / "so.yaml"
    zero.write_text(
        "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: vllm}\n"
        "spec:\n  scaleTargetRef: {name: vllm}\n  minReplicaCount: 0\n  triggers:\n  - type: prometheus\n"
        "    metadata: {serverAddress: 'http://p:9090', threshold: '5', query: 'sum(vllm:num_requests_waiting)'}\n"
    )
    (q,) = file_queries(zero)
    result = live.check(q)
    assert (result.status, result.rules) == ("warning", ["scale-from-zero"])
    assert result.status == OfflineChecker([parse_target("vllm==0.32.0")]).check(q).status
    # llm-d's dashboards: a variable with All and no saved value is All, as Grafana selects it (its first
    # option, sglang, would empty this panel)
    board = tmp_path / "board.json"
    variable = {"name": "namespace", "type": "query", "query": "label_values(job)",
                "includeAll": True, "multi": False, "allValue": ".*"}  # fmt: skip
    panel = {"title": "p", "targets": [{"refId": "A", "expr": 'sum(vllm:num_requests_running{job=~"$namespace"})'}]}
    board.write_text(json.dumps({"templating": {"list": [variable]}, "panels": [panel]}))
    (q,) = file_queries(board, lookup=HttpPrometheus(prom))
    assert q.expr == 'sum(vllm:num_requests_running{job=~".*"})'
    assert live.check(q).status == "ok"


def test_live_diagnosis_keeps_a_regex_escaped(prom: str) -> None:
    # llm-d's dashboards filter on `model_name=~"Qwen/Qwen2\\.5-7B-Instruct"`: the diagnosis's own queries
    # must keep the escaping (they once failed with "unknown escape sequence")
    expr = 'sum(vllm:num_requests_running{model_name=~"Qwen/Qwen2\\\\.5-7B-Instruct"})'
    result = Checker(HttpPrometheus(prom)).check(Query("f", "w", expr))
    assert result.status == "empty", result.reasons
    assert result.reasons == [
        'vllm:num_requests_running: label matcher model_name=~"Qwen/Qwen2\\\\.5-7B-Instruct" matches nothing; '
        "model_name has: 'tiny'"
    ]
