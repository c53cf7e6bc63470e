"""`check --against ENGINE==VERSION`: queries judged from the release tables (no Prometheus); the lints and
SARIF are in test_offline_lints.py.

The corpus files (tests/fixtures/check_corpus, provenance.json) are stored as found; the verdict of every
non-ok query on each named release is written here by hand from the release tables' facts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter.check import history, tables
from exporter.check.inputs import Query, file_queries
from exporter.check.judge import judge
from exporter.check.offline import TargetError, parse_target
from exporter.check.variables import parse as parse_variables
from exporter.check.variables import resolve
from exporter.promql.parse import parse
from exporter.promql.selectors import selectors
from exporter.promql.tokens import PromQLSyntaxError
from tests.check.against import CORPUS, not_ok, offline, run, verdicts

# --- structure: as PromQL evaluates ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "state"),
    [
        ("a or e", "data"),
        ("e or e", "empty"),
        ("a and e", "empty"),
        ("a unless e", "data"),
        ("e unless a", "empty"),
        ("a / e", "empty"),
        ("e > 3", "empty"),
        ("time() - e", "empty"),
        ("sum by (le) (rate(e[5m]))", "empty"),
        ("histogram_quantile(0.9, sum by (le) (rate(a[5m])))", "data"),
        ("absent(e)", "data"),
        ("absent(a)", "empty"),
        ("a * f", "flag"),
        ("u + a", "unjudged"),
        ("u or e", "unjudged"),
        ("a / scalar(e)", "data"),  # scalar() of nothing is NaN, not nothing
        ("sum(rate(e[5m])) or vector(0)", "data"),
    ],
)
def test_emptiness_follows_promql(expr: str, state: str) -> None:
    verdict = {"a": "data", "e": "empty", "f": "flag"}
    assert judge(parse(expr), lambda s: verdict.get(s.name, "unjudged")).state == state


def test_an_or_with_a_constant_side_is_recorded_as_hiding() -> None:
    expr = "sum(rate(e[5m])) or on() vector(0)"
    outcome = judge(parse(expr), lambda s: "empty")
    assert [expr[h.empty.start : h.empty.end] for h in outcome.hidden] == ["sum(rate(e[5m]))"]
    assert judge(parse("sum(a) or vector(0)"), lambda s: "data").hidden == ()


def test_parser_precedence_and_errors() -> None:
    tree = parse("a + b * c or d and e")
    assert tree.op == "or"  # type: ignore[attr-defined]
    for bad in ("sum(", "a +", "a b", "rate(x[5m]"):
        with pytest.raises(PromQLSyntaxError):
            parse(bad)


def test_matchers_keep_their_escaping_when_written_back() -> None:
    # the llm-d dashboards' model filter: the rewritten query must still parse as PromQL
    (sel,) = selectors('vllm:x{model_name=~"Qwen/Qwen2\\\\.5-7B-Instruct"}')
    assert str(sel) == 'vllm:x{model_name=~"Qwen/Qwen2\\\\.5-7B-Instruct"}'
    assert selectors(str(sel)) == [sel]


# --- release facts ------------------------------------------------------------------------------------------


def test_hidden_since_is_the_first_release_that_hid_it() -> None:
    names = history.engines()[0].names
    assert names["vllm:time_per_output_token_seconds"].hidden_since == "0.12.0"
    assert names["vllm:gpu_cache_usage_perc"].hidden_since == "0.11.0"


def test_derived_tables_are_up_to_date() -> None:
    assert tables.main([]) == 0
    assert history.main([]) == 0


def test_targets_name_known_releases() -> None:
    assert str(parse_target("vllm==0.33")) == "vllm==0.33.0"
    with pytest.raises(TargetError, match="not in the release tables"):
        parse_target("vllm==9.9.9")
    with pytest.raises(TargetError, match="no engine 'vlm'"):
        parse_target("vlm==0.33.0")


# --- the corpus on named releases ---------------------------------------------------------------------------


def test_kubeai_dashboard_on_vllm_033_and_010() -> None:
    name = "kubeai-vllm-grafana-dashboard.json"
    tpot = {f"panel 'Time Per Output Token Latency' query {q}": "empty" for q in "ABCDE"}
    # 0.33.0: TPOT removed in 0.15.0, gpu_cache_usage_perc in 0.12.0, num_requests_swapped in 0.8.0
    assert not_ok(offline("vllm==0.33.0"), name) == {
        "panel 'GPU Cache Usage' query A": "empty",
        **tpot,
        "panel 'Scheduler State' query B": "empty",
    }
    # 0.10.1: everything but the V0-only swapped gauge is still written
    assert not_ok(offline("vllm==0.10.1"), name) == {"panel 'Scheduler State' query B": "empty"}
    # 0.11.0 hides gpu_cache_usage_perc in its deprecation window: empty by default, renamed (the flag a stop-gap)
    assert not_ok(offline("vllm==0.11.0"), name) == {
        "panel 'GPU Cache Usage' query A": "empty",
        "panel 'Scheduler State' query B": "empty",
    }


def test_fix_renames_histogram_samples_and_keeps_variables() -> None:
    checker = offline("vllm==0.33.0")
    results = {
        r.query.where: r for r in map(checker.check, file_queries(CORPUS / "kubeai-vllm-grafana-dashboard.json"))
    }
    assert results["panel 'GPU Cache Usage' query A"].fix == 'vllm:kv_cache_usage_perc{model_name="$model_name"}'
    assert results["panel 'Time Per Output Token Latency' query E"].fix == (
        'rate(vllm:inter_token_latency_seconds_sum{model_name="$model_name"}[$__rate_interval])\n/\n'
        'rate(vllm:inter_token_latency_seconds_count{model_name="$model_name"}[$__rate_interval])'
    )
    reason = results["panel 'GPU Cache Usage' query A"].reasons[0]
    assert reason == (
        "vllm:gpu_cache_usage_perc: not written by vLLM 0.33.0: vllm:gpu_cache_usage_perc was removed in vLLM 0.12.0 "
        "(hidden behind --show-hidden-metrics-for-version from 0.11.0); its successor is vllm:kv_cache_usage_perc "
        "(stable name llm_kv_cache_usage_ratio); checked against vLLM 0.33.0"
    )


def test_eks_dashboard_router_series_are_not_judged() -> None:
    got = verdicts(offline("vllm==0.33.0"), "production-stack-eks-vllm-dashboard.json")
    router = ["Available vLLM instances", "Current QPS", "CPU Usage (%)", "Memory Usage (%)", "Disk Usage (%)"]
    assert {t: got[f"panel {t!r} query A"] for t in router} == dict.fromkeys(router, "unjudged")
    assert {w: s for w, s in got.items() if s == "empty"} == {
        "panel 'Average ITL' query A": "empty",
        "panel 'GPU KV Usage Percentage' query A": "empty",
        "panel 'GPU Cache Usage (%)' query A": "empty",
        "panel 'GPU KV Cache Hit Rate' query A": "empty",
        "panel 'Number of Swapped Requests' query A": "empty",
    }


def test_current_dashboard_is_clean_on_the_release_it_was_written_for() -> None:
    assert not_ok(offline("vllm==0.32.0"), "production-stack-vllm-model-metrics-dashboard.json") == {}
    assert not_ok(offline("vllm==0.33.0"), "production-stack-keda-scaled-object.yaml") == {}


def test_an_engine_without_against_is_not_judged() -> None:
    got = verdicts(offline("sglang==0.5.23"), "kubeai-vllm-grafana-dashboard.json")
    assert set(got.values()) == {"unjudged"}


def test_from_prints_only_what_the_upgrade_breaks() -> None:
    done = run("--against", "vllm==0.33.0", "--from", "vllm==0.10.1", "--output", "json",
               str(CORPUS / "kubeai-vllm-grafana-dashboard.json"))  # fmt: skip
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    # num_requests_swapped was already gone on 0.10.1: not the upgrade's doing
    assert sorted(r["location"] for r in report["results"]) == [
        "panel 'GPU Cache Usage' query A",
        *(f"panel 'Time Per Output Token Latency' query {q}" for q in "ABCDE"),
    ]
    assert all(r["status"] == "empty" and r["rules"] == ["renamed"] for r in report["results"])


def test_from_says_what_was_read_and_judged_when_nothing_breaks(tmp_path: Path) -> None:
    rules = {"groups": [{"name": "g", "rules": [{"alert": "Q", "expr": "vllm:num_requests_waiting > 5"},
                                                 {"alert": "U", "expr": "up == 0"}]}]}  # fmt: skip
    (tmp_path / "rules.yaml").write_text(json.dumps(rules))
    done = run("--against", "vllm==0.33.0", "--from", "vllm==0.10.0", str(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "2 queries in 1 files: 1 judged, 1 not judged; none broken by the upgrade from vLLM 0.10.0 to vLLM 0.33.0\n"
    )


def test_from_summary_counts_every_query_read_not_only_the_broken() -> None:
    board = str(CORPUS / "kubeai-vllm-grafana-dashboard.json")
    done = run("--against", "vllm==0.33.0", "--from", "vllm==0.10.1", board)
    assert done.stdout.splitlines()[-1] == (
        "19 queries in 1 files: 19 judged; 6 broken by the upgrade from vLLM 0.10.1 to vLLM 0.33.0 (6 empty)"
    )
    report = json.loads(run("--against", "vllm==0.33.0", "--from", "vllm==0.10.1", "--output", "json", board).stdout)
    assert (report["read"], report["counts"]["empty"]) == ({"queries": 19, "files": 1, "judged": 19}, 6)


def test_from_on_files_without_queries_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    done = run("--against", "vllm==0.33.0", "--from", "vllm==0.10.0", str(tmp_path / "rules.yaml"))
    assert (done.returncode, done.stdout.splitlines()[0]) == (2, "ERROR no PromQL queries found in the given files")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("",), "argument FILES: an empty file name"),
        (("--timeout", "inf"), "argument --timeout: 'inf': a number of seconds above 0 is expected"),
        (("--timeout", "nan"), "argument --timeout: 'nan': a number of seconds above 0 is expected"),
    ],
)
def test_arguments_that_would_read_everything_or_wait_forever_are_refused(args: tuple[str, ...], error: str) -> None:
    done = run("--against", "vllm==0.33.0", *args)
    assert (done.returncode, done.stderr.splitlines()[-1]) == (2, f"llm-exporter check: error: {error}")


def test_a_bearer_token_file_that_is_no_text_is_named(tmp_path: Path) -> None:
    (tmp_path / "token").write_bytes(b"\xff\xfe")
    done = run("--prometheus", "http://127.0.0.1:9", "--bearer-token-file", str(tmp_path / "token"), str(CORPUS))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"check: Prometheus http://127.0.0.1:9: --bearer-token-file {tmp_path / 'token'}: cannot read: 'utf-8' "
        "codec can't decode byte 0xff in position 0: invalid start byte\n"
    )


def test_a_file_name_too_long_to_look_up_is_a_named_bad_file() -> None:
    done = run("--against", "vllm==0.33.0", "9" * 300)
    assert done.returncode == 2
    assert done.stdout.splitlines()[0] == f"ERROR {'9' * 300}: cannot read: File name too long"


def test_prometheus_and_against_are_exclusive() -> None:
    done = run("--prometheus", "http://127.0.0.1:1", "--against", "vllm==0.33.0", str(CORPUS))
    assert done.returncode == 2 and "not both" in done.stderr
    assert run(str(CORPUS)).returncode == 2


# --- variables offline --------------------------------------------------------------------------------------


def test_all_with_no_saved_value_resolves_to_all() -> None:
    dashboard = {
        "templating": {
            "list": [
                {"name": "namespace", "type": "custom", "query": "a,b", "includeAll": True, "multi": True},
                {"name": "model", "type": "custom", "query": "m1,m2"},
                {"name": "pod", "type": "query", "query": "label_values(pod)", "includeAll": True},
            ]
        }
    }
    values = resolve(parse_variables(dashboard)).values
    assert values["namespace"].values == ("a", "b")  # All: every option
    assert values["model"].values == ("m1",)  # no All: the first option
    assert values["pod"].values == (".*",)  # a query variable without Prometheus: All


def test_query_outside_any_engine_is_not_judged() -> None:
    result = offline("vllm==0.33.0").check(Query("f", "w", 'kube_pod_status_ready{condition="true"}'))
    assert result.status == "unjudged"
    assert result.reasons == ["kube_pod_status_ready: not judged: no engine's release table owns it"]


def test_names_the_files_record_are_theirs(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(
        "groups:\n- name: g\n  rules:\n  - record: vllm:queue_total:sum\n    expr: sum(vllm:num_requests_waiting)\n"
        "  - alert: Queue\n    expr: vllm:queue_total:sum > 10\n"
    )
    done = run("--against", "vllm==0.33.0", "--output", "json", str(path))
    assert done.returncode == 0, done.stdout
    assert [r["status"] for r in json.loads(done.stdout)["results"]] == ["ok", "unjudged"]


def test_write_rewrites_to_the_successor_on_the_target_release(tmp_path: Path) -> None:
    board = tmp_path / "board.json"
    panels = [
        {
            "title": "kv",
            "targets": [{"refId": "A", "expr": 'vllm:gpu_cache_usage_perc{model_name=~"Qwen/Qwen2\\\\.5"}'}],
        }
    ]
    text = json.dumps({"panels": panels}, indent=2)
    board.write_text(text)
    assert run("--against", "vllm==0.33.0", "--write", str(board)).returncode == 1
    assert board.read_text() == text.replace("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc")
    done = run("--against", "vllm==0.33.0", str(board))
    assert done.returncode == 0, done.stdout
    # on 0.11.0 the old name is still there behind the hidden-metrics flag: the rewritten one is what is written
    assert run("--against", "vllm==0.11.0", str(board)).returncode == 0


def test_tgi_dashboard_before_and_after_the_summary_change() -> None:
    name = "tgi-grafana-dashboard.json"
    skipped = {f"panel 'Speculated Tokens' query {q}": "empty" for q in "ABC"}
    assert not_ok(offline("tgi==3.3.7"), name) == skipped  # tgi_request_skipped_tokens: a summary from 2.3.0
    assert not_ok(offline("tgi==2.3.0"), name) == skipped
    assert not_ok(offline("tgi==2.2.0"), name) == {}
    results = [offline("tgi==3.3.7").check(q) for q in file_queries(CORPUS / name)]
    assert {r.rules[0] for r in results if r.status == "empty"} == {"summary-no-buckets"}
    done = run("--against", "tgi==3.3.7", "--from", "tgi==2.2.0", "--output", "json", str(CORPUS / name))
    assert sorted(r["location"] for r in json.loads(done.stdout)["results"]) == sorted(skipped)


def test_lmdeploy_dashboard_on_releases_before_inter_token_latency() -> None:
    name = "lmdeploy-dashboard.json"
    assert not_ok(offline("lmdeploy==0.16.0"), name) == {}
    assert not_ok(offline("lmdeploy==0.10.0"), name) == {}
    # lmdeploy:iter_token_latency first appears in 0.10.0
    assert not_ok(offline("lmdeploy==0.9.2"), name) == {
        f"panel 'Inter-Token Latency' query {q}": "empty" for q in "ABCDE"
    }
    results = [offline("lmdeploy==0.9.2").check(q) for q in file_queries(CORPUS / name)]
    assert {r.rules[0] for r in results if r.status == "empty"} == {"not-yet"}
