"""`check --against`'s lints, each on a minimal file that triggers it and one that must not, and its SARIF
output (no Prometheus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter.check.inputs import file_queries
from exporter.check.report import RULES
from tests.check.against import CORPUS, offline, run


def rule_file(tmp_path: Path, expr: str, name: str = "rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"groups": [{"name": "g", "rules": [{"record": "r", "expr": expr}]}]}))
    return path


def lint(tmp_path: Path, expr: str, *targets: str, extra: tuple[Path, ...] = ()) -> tuple[str, list[str], list[str]]:
    converting = tuple(c for p in extra for c in _converting(p))
    (query,) = file_queries(rule_file(tmp_path, expr))
    result = offline(*targets, converting=converting).check(query)
    return result.status, result.rules, result.reasons


def _converting(path: Path) -> list[str]:
    from exporter.check import scrape
    from exporter.check.inputs import load_documents

    return [c for doc in load_documents(path) for c in scrape.converting(doc, path.name)]


@pytest.mark.parametrize(
    ("expr", "target", "rule", "text"),
    [
        ("sglang_num_running_reqs", "sglang==0.5.23", "wrong-separator",
         "no SGLang release exposes sglang_num_running_reqs; the name is sglang:num_running_reqs; the underscore "
         "form only ever came from Dynamo re-publishing SGLang's metrics, fixed in Dynamo in 2026-01"),
        ("rate(vllm_prompt_tokens_total[5m])", "vllm==0.33.0", "wrong-separator",
         "no vLLM release exposes vllm_prompt_tokens_total; the name is vllm:prompt_tokens_total"),
        ("rate(vllm:prompt_tokens[5m])", "vllm==0.33.0", "counter-without-total",
         "no vLLM release exposes vllm:prompt_tokens: it is a counter, its samples are vllm:prompt_tokens_total"),
        ("rate(vllm:e2e_request_latency_seconds[5m])", "vllm==0.33.0", "family-name",
         "no vLLM release writes vllm:e2e_request_latency_seconds as a sample: vllm:e2e_request_latency_seconds "
         "writes vllm:e2e_request_latency_seconds_bucket, vllm:e2e_request_latency_seconds_count, "
         "vllm:e2e_request_latency_seconds_sum"),
        ("rate(tgi_request_skipped_tokens_bucket[5m])", "tgi==3.3.7", "summary-no-buckets",
         "tgi_request_skipped_tokens is a summary from TGI 2.3.0 on: it has no buckets; use "
         "tgi_request_skipped_tokens{quantile=...}, tgi_request_skipped_tokens_sum or "
         "tgi_request_skipped_tokens_count"),
        ("rate(sglang:num_retracted_reqs_total[5m])", "sglang==0.5.23", "look-alike",
         "no SGLang release exposes sglang:num_retracted_reqs_total; the counter of retracted requests is "
         "sglang:num_retracted_requests_total (sglang:num_retracted_reqs is the gauge of the last batch)"),
        ("rate(sglang:hicache_eviction_tokens_total[5m])", "sglang==0.5.23", "look-alike",
         "no SGLang release exposes sglang:hicache_eviction_tokens_total; HiCache evictions are counted by "
         "sglang:evicted_tokens_total"),
    ],
)  # fmt: skip
def test_name_lints(tmp_path: Path, expr: str, target: str, rule: str, text: str) -> None:
    status, rules, reasons = lint(tmp_path, expr, target)
    assert (status, rules) == ("empty", [rule])
    assert reasons[0].split(": ", 1)[1] == text


@pytest.mark.parametrize(
    ("expr", "target"),
    [
        ("sglang:num_running_reqs", "sglang==0.5.23"),
        ("rate(vllm:prompt_tokens_total[5m])", "vllm==0.33.0"),
        ("histogram_quantile(0.9, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))", "vllm==0.33.0"),
        ("rate(tgi_request_skipped_tokens_bucket[5m])", "tgi==2.2.0"),  # a histogram until 2.3.0
        ("rate(sglang:num_retracted_requests_total[5m])", "sglang==0.5.23"),
        ("sum(rate(vllm:prompt_tokens_total[5m])) or vector(0)", "vllm==0.33.0"),
    ],
)
def test_healthy_queries_draw_no_lint(tmp_path: Path, expr: str, target: str) -> None:
    assert lint(tmp_path, expr, target) == ("ok", [], [])


def test_flag_gated_families_need_their_flag(tmp_path: Path) -> None:
    status, rules, reasons = lint(tmp_path, "rate(vllm:nixl_num_failed_transfers_total[5m])", "vllm==0.33.0")
    assert (status, rules) == ("allowed", ["needs-flag"])
    assert "only with the NIXL KV connector (--kv-transfer-config)" in reasons[0]
    assert "needs the NIXL KV connector (--kv-transfer-config), not renamed" in reasons[0]
    status, rules, reasons = lint(tmp_path, "sglang:hicache_host_used_tokens", "sglang==0.5.23")
    assert (status, rules) == ("allowed", ["needs-flag"]) and "HiCache (--enable-hierarchical-cache)" in reasons[0]
    _, rules, reasons = lint(tmp_path, "vllm:lora_requests_info", "vllm==0.33.0")
    assert rules == ["needs-flag"] and "LoRA (--enable-lora)" in reasons[0]
    _, rules, reasons = lint(tmp_path, "vllm:estimated_flops_per_gpu_total", "vllm==0.33.0")
    assert rules == ["needs-flag"] and "--enable-mfu-metrics" in reasons[0]
    # a hidden metric's window is a rename with a grace flag: empty by default, the successor, the flag a stop-gap
    status, rules, reasons = lint(tmp_path, "vllm:gpu_cache_usage_perc", "vllm==0.11.0")
    assert (status, rules) == ("empty", ["renamed"]) and "renamed to vllm:kv_cache_usage_perc" in reasons[0]
    assert "--show-hidden-metrics-for-version=0.10 shows it again for this release only, a stop-gap" in reasons[0]


def test_or_vector_zero_hiding_an_empty_side_warns(tmp_path: Path) -> None:
    status, rules, reasons = lint(tmp_path, "sum(vllm:gpu_cache_usage_perc) or vector(0)", "vllm==0.33.0")
    assert (status, rules) == ("warning", ["or-constant-hides-empty"])
    assert reasons[0] == (
        "`sum(vllm:gpu_cache_usage_perc)` is empty on vLLM 0.33.0; the `or vector(0)` hides it: the panel shows "
        "a permanent vector(0) instead of the data"
    )
    assert "its successor is vllm:kv_cache_usage_perc" in reasons[1]


def test_native_histogram_conversion(tmp_path: Path) -> None:
    expr = "histogram_quantile(0.9, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))"
    monitor = tmp_path / "podmonitor.yaml"
    monitor.write_text(
        "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: vllm}\n"
        "spec:\n  convertClassicHistogramsToNHCB: true\n  podMetricsEndpoints: [{port: http}]\n"
    )
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  convert_classic_histograms_to_nhcb: true\nscrape_configs: []\n")
    keeps = tmp_path / "keeps.yml"
    keeps.write_text(
        "scrape_configs:\n- job_name: vllm\n  convert_classic_histograms_to_nhcb: true\n"
        "  always_scrape_classic_histograms: true\n"
    )
    for converting in (monitor, config):
        status, rules, reasons = lint(tmp_path, expr, "vllm==0.33.0", extra=(converting,))
        assert (status, rules) == ("empty", ["native-histogram-bucket"])
        assert "query vllm:e2e_request_latency_seconds (histogram_quantile reads it as is)" in reasons[0]
    assert lint(tmp_path, expr, "vllm==0.33.0", extra=(keeps,))[0] == "ok"
    (query,) = file_queries(rule_file(tmp_path, expr))
    result = offline("vllm==0.33.0", converting=("x",)).check(query)
    assert result.fix == "histogram_quantile(0.9, sum by (le) (rate(vllm:e2e_request_latency_seconds[5m])))"


def scaled_object(tmp_path: Path, minimum: str, query: str) -> Path:
    path = tmp_path / "so.yaml"
    path.write_text(
        "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: vllm}\n"
        f"spec:\n  scaleTargetRef: {{name: vllm}}\n{minimum}  triggers:\n  - type: prometheus\n"
        f"    metadata: {{serverAddress: 'http://p:9090', threshold: '5', query: '{query}'}}\n"
    )
    return path


@pytest.mark.parametrize(
    ("minimum", "query", "warned"),
    [
        ("  minReplicaCount: 0\n", "sum(vllm:num_requests_waiting)", True),
        ("", "sum(vllm:num_requests_waiting)", True),  # KEDA's default minReplicaCount is 0
        ("  minReplicaCount: 1\n", "sum(vllm:num_requests_waiting)", False),
        ("  minReplicaCount: 0\n", "sum(inference_pool_average_queue_size)", False),  # the gateway's series
    ],
)
def test_scale_from_zero_trigger_on_the_pods_own_series(tmp_path: Path, minimum: str, query: str, warned: bool) -> None:
    (q,) = file_queries(scaled_object(tmp_path, minimum, query))
    result = offline("vllm==0.33.0").check(q)
    if warned:
        assert (result.status, result.rules) == ("warning", ["scale-from-zero"])
        assert "the trigger can never activate" in result.reasons[0]
    else:
        assert "scale-from-zero" not in result.rules


def test_a_label_written_only_with_a_flag(tmp_path: Path) -> None:
    status, rules, reasons = lint(tmp_path, 'sglang:num_running_reqs{priority="1"}', "sglang==0.5.23")
    assert (status, rules) == ("allowed", ["needs-flag"])
    assert reasons == [
        'sglang:num_running_reqs{priority="1"}: SGLang writes the label priority only with priority scheduling '
        '(--enable-priority-scheduling): priority="1" needs it, not renamed'
    ]
    assert lint(tmp_path, 'sglang:num_running_reqs{model_name="m"}', "sglang==0.5.23")[0] == "ok"


# --- SARIF --------------------------------------------------------------------------------------------------


def test_sarif_output_is_structurally_valid(tmp_path: Path) -> None:
    path = rule_file(tmp_path, "sum(vllm:gpu_cache_usage_perc) or vector(0)")
    done = run("--against", "vllm==0.33.0", "--output", "sarif", str(CORPUS / "kubeai-vllm-grafana-dashboard.json"),
               str(path))  # fmt: skip
    assert done.returncode == 1, done.stderr
    log = json.loads(done.stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run_,) = log["runs"]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.id for r in RULES]
    for result in run_["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] and location["region"]["startLine"] >= 1
    by_rule = sorted((r["ruleId"], r["level"]) for r in run_["results"])
    assert by_rule == sorted(
        [("renamed", "error")] * 6 + [("removed", "error"), ("or-constant-hides-empty", "warning")]
    )
    kv = next(r for r in run_["results"] if "gpu_cache_usage_perc{" in r["message"]["text"])
    line = (
        (CORPUS / "kubeai-vllm-grafana-dashboard.json")
        .read_text()
        .splitlines()[kv["locations"][0]["physicalLocation"]["region"]["startLine"] - 1]
    )
    assert "vllm:gpu_cache_usage_perc" in line
