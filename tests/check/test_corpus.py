"""`check` on dashboards and autoscalers written outside this project, against Prometheus 3 scraping a real vLLM.

The files (tests/fixtures/check_corpus, provenance.json) are stored as found. vLLM 0.32 (CPU, the tiny
model) is scraped directly; a few completions give every histogram and counter samples. For each file the
test asserts exactly which queries are empty, and why: a query variable resolved from Prometheus never makes
a false alarm, and a renamed vLLM metric is explained from the release history with its successor.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter.check.evaluate import Checker, Result
from exporter.check.inputs import file_queries
from exporter.demo import vllm_env
from exporter.sources.prometheus import HttpPrometheus
from tests.bundle.servers import process, prometheus, query, static_job, wait_for, wait_http

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "check_corpus"
PROVENANCE = json.loads((CORPUS / "provenance.json").read_text())["files"]

TPOT = (
    "vllm:time_per_output_token_seconds was removed in vLLM 0.15.0 (hidden behind "
    "--show-hidden-metrics-for-version from 0.12.0); its successor is vllm:inter_token_latency_seconds "
    "(stable name llm_inter_token_latency_seconds); the running vLLM is 0.32.0 (from llm_engine_info)"
)
KV = (
    "vllm:gpu_cache_usage_perc was removed in vLLM 0.12.0 (hidden behind --show-hidden-metrics-for-version "
    "from 0.11.0); its successor is vllm:kv_cache_usage_perc (stable name llm_kv_cache_usage_ratio); "
    "the running vLLM is 0.32.0 (from llm_engine_info)"
)
PREFIX = (
    "vllm:gpu_prefix_cache_{0}_total was removed in vLLM 0.12.0 (hidden behind --show-hidden-metrics-for-version "
    "from 0.11.0); its successor is vllm:prefix_cache_{0}_total (stable name llm_prefix_cache_{0}_total); "
    "the running vLLM is 0.32.0 (from llm_engine_info)"
)
SWAPPED = (
    "vllm:num_requests_swapped was removed in vLLM 0.8.0; it has no successor; "
    "the running vLLM is 0.32.0 (from llm_engine_info)"
)
NEVER = "never present in the last 7d"


def complete(base: str) -> None:
    body = json.dumps({"model": "tiny", "prompt": "a dashboard nobody checks", "max_tokens": 8}).encode()
    request = urllib.request.Request(base + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        response.read()


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = vllm_env.ensure_venv(progress=lambda msg: print(msg, flush=True))
    model = vllm_env.ensure_model(python, progress=lambda msg: print(msg, flush=True))
    server = vllm_env.start_server(python, model, vllm_env.free_port(), tmp_path_factory.mktemp("vllm") / "vllm.log")
    config = tmp_path_factory.mktemp("exporter") / "config.yaml"
    config.write_text(
        f"engines: {{targets: [{{url: '{server.url}', labels: {{namespace: corpus, pod: vllm-0}}}}]}}\n"
        "gpu: {enabled: 'false'}\n"
    )
    port = vllm_env.free_port()
    serve = [sys.executable, "-m", "exporter", "serve", "--config", str(config), "--listen", f"127.0.0.1:{port}"]
    workdir = tmp_path_factory.mktemp("prom")
    try:
        with (
            process(serve, workdir / "exporter.log"),
            prometheus(
                workdir, [static_job("vllm", [server.url]), static_job("exporter", [f"http://127.0.0.1:{port}"])]
            ) as url,
        ):
            wait_http(f"http://127.0.0.1:{port}/metrics")
            for _ in range(3):
                complete(server.url)
            # two scrapes after the requests: every rate() over $__rate_interval has its two samples
            wait_for(lambda: bool(query(url, "count_over_time(vllm:request_success_total[1m]) > 3")), 60, "scrapes")
            wait_for(lambda: bool(query(url, "llm_engine_info")), 60, "the exporter's llm_engine_info")
            yield url
    finally:
        server.stop()


def check(prom: str, name: str) -> list[Result]:
    prometheus_ = HttpPrometheus(prom)
    checker = Checker(prometheus_)
    return [checker.check(q) for q in file_queries(CORPUS / name, lookup=prometheus_)]


def empty(results: list[Result]) -> dict[str, list[str]]:
    return {f"{r.query.where}": r.reasons for r in results if r.status != "ok"}


def test_every_corpus_file_has_provenance() -> None:
    stored = {p.name for p in CORPUS.iterdir() if p.name != "provenance.json"}
    assert stored == set(PROVENANCE)
    for entry in PROVENANCE.values():
        assert entry["repository"].startswith("https://github.com/") and len(entry["commit"]) == 40


def test_vllm_current_dashboard_has_no_false_alarm(prom: str) -> None:
    # label_values(model_name) resolves to the served model: model_name="tiny", as Grafana would query
    results = check(prom, "production-stack-vllm-model-metrics-dashboard.json")
    assert len(results) == 27
    assert all('model_name="tiny"' in r.query.expr for r in results)
    assert empty(results) == {}


def test_vllm_06_era_dashboard_names_exactly_the_renamed_metrics(prom: str) -> None:
    # kubeai's copy saves model_name=llama-3.1-8b-instruct-fp8-l4; Grafana (and check) take the first value served
    results = check(prom, "kubeai-vllm-grafana-dashboard.json")
    assert len(results) == 19
    tpot = [f"vllm:time_per_output_token_seconds_bucket: {NEVER}: {TPOT}"]
    assert empty(results) == {
        "panel 'GPU Cache Usage' query A": [f"vllm:gpu_cache_usage_perc: {NEVER}: {KV}"],
        **{f"panel 'Time Per Output Token Latency' query {q}": tpot for q in "ABCD"},
        "panel 'Time Per Output Token Latency' query E": [
            f"vllm:time_per_output_token_seconds_sum: {NEVER}: {TPOT}",
            f"vllm:time_per_output_token_seconds_count: {NEVER}: {TPOT}",
        ],
        "panel 'Scheduler State' query B": [f"vllm:num_requests_swapped: {NEVER}: {SWAPPED}"],
    }
    fixes = {r.query.where: r.fix for r in results if r.fix}
    assert fixes["panel 'GPU Cache Usage' query A"] == 'vllm:kv_cache_usage_perc{model_name="$model_name"}'
    assert fixes["panel 'Time Per Output Token Latency' query A"] == (
        "histogram_quantile(0.99, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket"
        '{model_name="$model_name"}[$__rate_interval])))'
    )


def test_dashboard_without_variables_and_foreign_metrics(prom: str) -> None:
    results = check(prom, "production-stack-eks-vllm-dashboard.json")
    assert len(results) == 15
    got = empty(results)
    # the router's own series (production-stack's router, not vLLM): not scraped here, no release table knows them
    router = ["Available vLLM instances", "Current QPS", "CPU Usage (%)", "Memory Usage (%)", "Disk Usage (%)"]
    for title in router:
        reasons = got.pop(f"panel {title!r} query A")
        assert len(reasons) == 1 and f"{NEVER} (not scraped, or renamed)" in reasons[0], reasons
    assert got == {
        "panel 'Average ITL' query A": [
            f"vllm:time_per_output_token_seconds_sum: {NEVER}: {TPOT}",
            f"vllm:time_per_output_token_seconds_count: {NEVER}: {TPOT}",
        ],
        "panel 'GPU KV Usage Percentage' query A": [f"vllm:gpu_cache_usage_perc: {NEVER}: {KV}"],
        "panel 'GPU Cache Usage (%)' query A": [f"vllm:gpu_cache_usage_perc: {NEVER}: {KV}"],
        "panel 'GPU KV Cache Hit Rate' query A": [
            f"vllm:gpu_prefix_cache_hits_total: {NEVER}: {PREFIX.format('hits')}",
            f"vllm:gpu_prefix_cache_queries_total: {NEVER}: {PREFIX.format('queries')}",
        ],
        "panel 'Number of Swapped Requests' query A": [f"vllm:num_requests_swapped: {NEVER}: {SWAPPED}"],
    }


def test_configmap_adapter_and_keda(prom: str) -> None:
    lmcache = check(prom, "production-stack-lmcache-dashboard-cm.yaml")
    assert [r.status for r in lmcache] == ["ok"] + ["empty"] * 5  # LMCache's own series: no LMCache here
    assert all(r.reasons[0].startswith("lmcache:") for r in lmcache[1:])
    adapter = check(prom, "production-stack-prom-adapter.yaml")
    assert [(r.query.where, r.status) for r in adapter] == [
        ("adapter custom rule 0 (vllm_num_requests_waiting) seriesQuery", "ok"),
        ("adapter custom rule 0 (vllm_num_requests_waiting) metricsQuery", "ok"),
        ("adapter custom rule 1 (vllm_num_incoming_requests_total) seriesQuery", "empty"),
        ("adapter custom rule 1 (vllm_num_incoming_requests_total) metricsQuery", "empty"),
    ]
    # the router's counter, not vLLM's: named from the anchored __name__ regex
    assert adapter[2].reasons[0].startswith(f"vllm:num_incoming_requests_total: {NEVER} (not scraped, or renamed)")
    keda = check(prom, "production-stack-keda-scaled-object.yaml")
    assert [(r.query.where, r.status) for r in keda] == [("ScaledObject vllm-scaledobject trigger 0", "ok")]


def test_aibrix_dashboard_with_metric_scoped_label_values(prom: str) -> None:
    # label_values(vllm:generation_tokens_total, model_name|job): the served model and the scrape job
    results = check(prom, "aibrix-vllm-engine-dashboard.json")
    assert len(results) == 37
    assert all('model_name="tiny"' in r.query.expr for r in results)
    assert all('job="vllm"' in r.query.expr for r in results if "job=" in r.query.raw)
    removed = "was removed in vLLM 0.8.0; it has no successor; the running vLLM is 0.32.0 (from llm_engine_info)"
    got = empty(results)
    assert set(got) == {
        *(f"panel 'Time Per Output Token Latency' query {q}" for q in "ABCDEF"),
        "panel 'Scheduler State' query B",
        "panel 'Prefix Cache Hit Rate' query A",
        "panel 'Prefix Cache Hit Rate' query B",
        "panel 'Cache Utilization' query A",
        "panel 'Cache Utilization' query B",
    }
    assert got["panel 'Cache Utilization' query A"] == [f"vllm:gpu_cache_usage_perc: {NEVER}: {KV}"]
    assert got["panel 'Cache Utilization' query B"] == [
        f"vllm:cpu_cache_usage_perc: {NEVER}: vllm:cpu_cache_usage_perc {removed}"
    ]
    assert got["panel 'Prefix Cache Hit Rate' query A"] == [
        f"vllm:gpu_prefix_cache_hit_rate: {NEVER}: vllm:gpu_prefix_cache_hit_rate {removed}"
    ]


def test_the_command_line_on_the_whole_corpus(prom: str) -> None:
    # as a user runs it: a directory, JSON for CI; the adapter's invalid sample is named, the rest checked
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "check", "--prometheus", prom, "--output", "json", str(CORPUS)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout)
    assert [e.split(":")[0] for e in report["errors"]] == [str(CORPUS / "prometheus-adapter-sample-config.yaml")]
    empty_by_file: dict[str, int] = {}
    for record in report["results"]:
        name = Path(record["file"].split(" ")[0]).name
        empty_by_file[name] = empty_by_file.get(name, 0) + (record["status"] == "empty")
    assert empty_by_file == {
        "aibrix-vllm-engine-dashboard.json": 11,
        "kubeai-vllm-grafana-dashboard.json": 7,
        "production-stack-eks-vllm-dashboard.json": 10,
        "production-stack-keda-scaled-object.yaml": 0,
        "production-stack-lmcache-dashboard-cm.yaml": 5,
        "production-stack-prom-adapter.yaml": 2,
        "production-stack-vllm-model-metrics-dashboard.json": 0,
        "prometheus-adapter-config-map.yaml": 4,  # cAdvisor and node metrics: nothing here scrapes them
        "tgi-grafana-dashboard.json": 55,  # TGI's and LMDeploy's own dashboards: no such engine here
        "lmdeploy-dashboard.json": 27,
        # llm-d's: 8 endpoint-picker queries (no EPP here), vllm:num_preemptions without _total, `up` of the
        # EPP's job, and its TTFT and ITL panels: they filter on a namespace the vLLM job here does not label
        "llm-d-failure-saturation-dashboard.json": 12,
    }
