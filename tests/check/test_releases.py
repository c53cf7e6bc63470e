"""`check --against` on the releases the tables hold: finals by number, pre-releases only when named, a
hidden name of a deprecation window judged as the rename it is, trtllm-serve's unprefixed names, and a
family whose meaning changed between the releases of an upgrade.

Provenance: vLLM's hidden window from data/vllm_metrics_by_version.json (time_per_output_token_seconds
deprecated for inter_token_latency_seconds; hidden_since 0.12.0 at vllm/v1/metrics/loggers.py:693, removed
in 0.15.0); TensorRT-LLM's releases from PyPI's list for `tensorrt-llm` (1.2.1 the newest final, 1.3.0 only
as rc0..rc29, then 1.4.0rc0/rc1) and the PRs named in exporter/engines/trtllm.py; LMDeploy 0.17.0/0.18.0 from
their wheels (loggers.py identical to v0.16.0's; 0.18.0's lmdeploy/metrics/stats.py:245-252 counts a request
without a generated token as all prefill).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.check.inputs import file_queries
from exporter.check.offline import OfflineChecker, TargetError, parse_target


def rule_file(tmp_path: Path, *exprs: str) -> Path:
    path = tmp_path / "rules.yaml"
    rules = [{"record": f"r{i}", "expr": e} for i, e in enumerate(exprs)]
    path.write_text(json.dumps({"groups": [{"name": "g", "rules": rules}]}))
    return path


def check(tmp_path: Path, expr: str, *targets: str, since: tuple[str, ...] = ()) -> tuple[str, list[str], list[str]]:
    (query,) = file_queries(rule_file(tmp_path, expr))
    checker = OfflineChecker([parse_target(t) for t in targets], since=[parse_target(t) for t in since])
    result = checker.check(query)
    return result.status, result.rules, result.reasons


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "check", *args], capture_output=True, text=True, timeout=120, check=False
    )


TPOT = "rate(vllm:time_per_output_token_seconds_bucket[5m])"


@pytest.mark.parametrize(("version", "flag"), [("0.12.0", "0.11"), ("0.14.1", "0.13")])
def test_a_hidden_name_of_a_deprecation_window_is_a_rename_not_a_feature_flag(
    tmp_path: Path, version: str, flag: str
) -> None:
    # before: "needs --show-hidden-metrics-for-version=0.11, not renamed" (allowed, exit 0)
    status, rules, reasons = check(tmp_path, TPOT, f"vllm=={version}")
    assert (status, rules) == ("empty", ["renamed"])
    assert reasons == [
        f"vllm:time_per_output_token_seconds_bucket: vllm:time_per_output_token_seconds_bucket is hidden by vLLM "
        f"{version} (deprecated for vllm:inter_token_latency_seconds, removed in vLLM 0.15.0): empty by default; "
        "renamed to vllm:inter_token_latency_seconds_bucket; "
        f"--show-hidden-metrics-for-version={flag} shows it again for this release only, a stop-gap"
    ]


def test_the_hidden_rename_is_fixed_to_its_successor(tmp_path: Path) -> None:
    done = run("--against", "vllm==0.14.1", "--fix", str(rule_file(tmp_path, TPOT)))
    assert done.returncode == 1, done.stderr
    assert "fix: rate(vllm:inter_token_latency_seconds_bucket[5m])" in done.stdout


def test_a_flag_that_is_no_deprecation_window_still_needs_the_flag(tmp_path: Path) -> None:
    status, rules, _ = check(tmp_path, "rate(vllm:nixl_num_failed_transfers_total[5m])", "vllm==0.33.0")
    assert (status, rules) == ("allowed", ["needs-flag"])


# --- releases ---------------------------------------------------------------------------------------------


def test_newest_finals_are_accepted() -> None:
    assert str(parse_target("trtllm==1.2.1")) == "trtllm==1.2.1"
    assert str(parse_target("lmdeploy==0.17.0")) == "lmdeploy==0.17.0"
    assert str(parse_target("lmdeploy==0.18")) == "lmdeploy==0.18.0"


def test_a_version_never_released_final_is_refused_with_why() -> None:
    with pytest.raises(TargetError) as refused:
        parse_target("trtllm==1.3.0")
    assert str(refused.value) == (
        "'trtllm==1.3.0': TensorRT-LLM 1.3.0 was never released final: only release candidates "
        "1.3.0rc0..1.3.0rc29 were published; (1.1.0 to 1.2.1; pre-releases when named: 1.4.0rc0, 1.4.0rc1)"
    )


def test_pre_releases_only_when_named() -> None:
    assert str(parse_target("trtllm==1.4.0rc1")) == "trtllm==1.4.0rc1"
    assert str(parse_target("trtllm==v1.4.0rc0")) == "trtllm==1.4.0rc0"
    with pytest.raises(TargetError, match=r"1\.4\.0 is not in the release tables"):
        parse_target("trtllm==1.4.0")  # its release candidates are not 1.4.0
    # LMDeploy's alphas: "v0.14.0" is the final, never 0.14.0a1 (the first of its number in the table)
    assert str(parse_target("lmdeploy==v0.14.0")) == "lmdeploy==0.14.0"
    assert str(parse_target("lmdeploy==0.14.0a2")) == "lmdeploy==0.14.0a2"


def test_trtllm_unprefixed_names_are_judged_and_renamed_on_upgrade(tmp_path: Path) -> None:
    expr = "sum(rate(request_success_total[5m]))"
    assert check(tmp_path, expr, "trtllm==1.2.1")[0] == "ok"  # before: not judged (no table owned it)
    status, rules, reasons = check(tmp_path, expr, "trtllm==1.4.0rc1")
    assert (status, rules) == ("empty", ["renamed"])
    assert "its successor is trtllm_request_success_total" in reasons[0]
    # without trtllm's --against an unprefixed name is anyone's: not judged
    assert check(tmp_path, expr, "vllm==0.33.0")[0] == "unjudged"
    done = run("--against", "trtllm==1.4.0rc1", "--from", "trtllm==1.2.1", "--fix",
               str(rule_file(tmp_path, expr, "sum(trtllm_num_requests_waiting)")))  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "fix: sum(rate(trtllm_request_success_total[5m]))" in done.stdout
    assert done.stdout.rstrip().endswith(
        "2 queries in 1 files: 2 judged; 1 broken by the upgrade from TensorRT-LLM 1.2.1 to TensorRT-LLM 1.4.0rc1 "
        "(1 empty)"
    )


PREFILL = "histogram_quantile(0.9, sum by (le) (rate(lmdeploy:request_prefill_time_seconds_bucket[5m])))"


def test_a_meaning_change_is_reported_on_the_upgrade_that_crosses_it(tmp_path: Path) -> None:
    status, rules, reasons = check(tmp_path, PREFILL, "lmdeploy==0.18.0", since=("lmdeploy==0.17.0",))
    assert (status, rules) == ("warning", ["meaning-changed"])
    assert reasons == [
        "lmdeploy:request_prefill_time_seconds_bucket: lmdeploy:request_prefill_time_seconds changed meaning in "
        "LMDeploy 0.18.0: a request that ends with no generated token (a scoring-only or failed request) now counts "
        "all its inference time as prefill and zero as decode: its first-token time is set to its finish time "
        "(at lmdeploy/metrics/stats.py:245-252, prefill_time_interval at stats.py:171-176)"
    ]
    # an upgrade that does not cross it, and no upgrade at all, say nothing
    assert check(tmp_path, PREFILL, "lmdeploy==0.17.0", since=("lmdeploy==0.16.0",))[0] == "ok"
    assert check(tmp_path, PREFILL, "lmdeploy==0.18.0")[0] == "ok"
    assert (
        check(tmp_path, "sum(lmdeploy:num_requests_waiting)", "lmdeploy==0.18.0", since=("lmdeploy==0.9.2",))[0] == "ok"
    )


# --- names no release has ---------------------------------------------------------------------------------


def test_an_engine_name_no_release_had_is_empty_on_every_release(tmp_path: Path) -> None:
    # before: "not judged: ... (another producer's name, a router's or a gateway's?)"
    status, rules, reasons = check(tmp_path, "rate(vllm:request_failure_total[5m])", "vllm==0.33.0")
    assert (status, rules) == ("empty", ["unknown"])
    assert reasons == [
        "vllm:request_failure_total: empty on every vLLM release: no vLLM release exposes "
        "vllm:request_failure_total; similar vLLM names: vllm:request_success_total, "
        "vllm:umbp_transfer_failed_total, vllm:watermark_requests_total"
    ]


def test_another_producers_name_under_the_prefix_stays_not_judged(tmp_path: Path) -> None:
    # production-stack's router: src/vllm_router/services/metrics_service/__init__.py (Gauge "vllm:current_qps")
    status, rules, reasons = check(tmp_path, "sum(vllm:current_qps)", "vllm==0.33.0")
    assert (status, rules) == ("unjudged", ["engine-name-not-judged"])
    assert reasons[0].endswith(
        "it is production-stack's router (src/vllm_router/services/metrics_service/__init__.py)'s name"
    )


def test_strict_fails_a_file_whose_engine_queries_cannot_be_judged(tmp_path: Path) -> None:
    path = rule_file(tmp_path, "sum(vllm:num_requests_waiting)", "up == 0")
    assert run("--against", "sglang==0.5.23", str(path)).returncode == 0
    done = run("--strict", "--against", "sglang==0.5.23", str(path))
    assert done.returncode == 1, done.stderr
    assert "vllm:num_requests_waiting: not judged: no --against for vLLM" in done.stdout
    sarif = json.loads(run("--strict", "--against", "sglang==0.5.23", "--output", "sarif", str(path)).stdout)
    levels = [(r["ruleId"], r["level"]) for r in sarif["runs"][0]["results"]]
    assert levels == [("engine-name-not-judged", "error")]
    sarif = json.loads(run("--against", "sglang==0.5.23", "--output", "sarif", str(path)).stdout)
    assert [r["level"] for r in sarif["runs"][0]["results"]] == ["warning"]
    # a name no engine owns (up) never fails it
    assert run("--strict", "--against", "sglang==0.5.23", str(rule_file(tmp_path, "up == 0"))).returncode == 0
