"""Producers that re-export an engine's names: a query on Ray Serve LLM's `ray_vllm_*` is judged by the vLLM
release it runs, spelled as Ray writes it there.

Ray Serve LLM records vLLM's families through vLLM's `RayPrometheusStatLogger`; Ray writes them under `ray_`,
counters with `_total`. From vLLM 0.11.0 the wrapper writes `_` for `:` (vLLM PR #25439,
`_get_sanitized_opentelemetry_name`, vllm/v1/metrics/ray_wrappers.py:70-80 of vLLM 0.32.0); up to 0.10.2 the
names kept vLLM's colon (`ray_vllm:prompt_tokens_total`, as KubeRay's dashboard for Ray 2.49.2 queries them).
The dashboards are KubeRay's own, stored as found (tests/fixtures/check_producers/PROVENANCE.md). The vLLM facts
each expected verdict rests on are vLLM's sources at the release, as data/vllm_metrics_by_version.json records
them (file:line there).
"""

from __future__ import annotations

from pathlib import Path

from exporter import catalogue
from exporter.check import opencost
from exporter.check.inputs import Query, file_queries
from exporter.check.offline import NOT_JUDGED
from exporter.check.producers import RAY_SERVE_VLLM, re_export
from exporter.check.report import RULES
from exporter.promql.selectors import selectors
from tests.check.against import offline

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "check_producers"
RAY_256 = FIXTURES / "kuberay-serve-llm-dashboard-ray-2.56.json"
RAY_2492 = FIXTURES / "kuberay-serve-llm-dashboard-ray-2.49.2.json"
SERVE_COUNTER = "ray_serve_deployment_request_counter_total"  # Ray Serve's own: no vLLM release judges it


def results(target: str, path: Path) -> dict[str, tuple[str, list[str]]]:
    checker = offline(target)
    return {r.query.where: (r.status, r.rules) for r in map(checker.check, file_queries(path))}


def test_the_ray_spelling_follows_the_vllm_release() -> None:
    assert RAY_SERVE_VLLM.written("vllm:prompt_tokens_total", "0.10.2") == "ray_vllm:prompt_tokens_total"
    assert RAY_SERVE_VLLM.written("vllm:prompt_tokens_total", "0.11.0") == "ray_vllm_prompt_tokens_total"
    assert re_export("ray_vllm_time_to_first_token_seconds_bucket") == (
        RAY_SERVE_VLLM,
        "vllm:time_to_first_token_seconds_bucket",
    )
    assert re_export("ray_vllm:num_requests_running") == (RAY_SERVE_VLLM, "vllm:num_requests_running")
    assert re_export(SERVE_COUNTER) is None
    assert re_export("vllm:num_requests_running") is None


def test_kuberay_dashboard_for_ray_256_on_vllm_015() -> None:
    got = results("vllm==0.15.0", RAY_256)
    empty = {where: rules for where, (status, rules) in got.items() if status == "empty"}
    assert empty == {
        # vllm:num_requests_swapped: V0's gauge (vllm/engine/metrics.py:78 of 0.7.3), gone from 0.8.0
        "panel 'Scheduler: Swapped' query A": ["removed"],
        # vllm:nixl_num_failed_transfers is a counter (nixl_connector.py:2677 of 0.15.0): Ray writes _total
        "panel 'NIXL: KV Transfer Failures' query A": ["counter-without-total"],
    }
    # every other query joins Ray Serve's own counter (for the deployment and replica labels): its vLLM side is
    # judged, the join is not, so the query is not judged; the reason names only Ray Serve's counter
    unjudged = [where for where, (status, _) in got.items() if status == "unjudged"]
    assert len(unjudged) == 32
    checker = offline("vllm==0.15.0")
    for query in file_queries(RAY_256):
        result = checker.check(query)
        if result.status == "unjudged":
            assert result.reasons == [f"{SERVE_COUNTER}: not judged: no engine's release table owns it"]
            assert result.rules == []  # Ray Serve's name is no engine's: --strict does not fail it
    assert sum(status == "ok" for status, _ in got.values()) == 17


def test_the_fix_of_a_ray_counter_without_total_keeps_the_ray_spelling() -> None:
    checker = offline("vllm==0.15.0")
    (result,) = [
        checker.check(q) for q in file_queries(RAY_256) if q.where == "panel 'NIXL: KV Transfer Failures' query A"
    ]
    assert result.renames == {"ray_vllm_nixl_num_failed_transfers": "ray_vllm_nixl_num_failed_transfers_total"}
    assert result.reasons == [
        "ray_vllm_nixl_num_failed_transfers (Ray Serve LLM's vllm:nixl_num_failed_transfers): no vLLM release "
        "exposes vllm:nixl_num_failed_transfers: it is a counter, its samples are vllm:nixl_num_failed_transfers_total"
    ]


def test_nixl_families_need_the_connector_as_under_vllm() -> None:
    # vllm:nixl_num_kv_expired_reqs_total: only with the NIXL connector, first in 0.15.0
    status, rules = judged("sum(rate(ray_vllm_nixl_num_kv_expired_reqs_total[5m]))", "vllm==0.15.0")
    assert (status, rules) == ("allowed", ["needs-flag"])
    # before 0.15.0: empty, with the same word vLLM's own name gets
    ray = judged("sum(rate(ray_vllm_nixl_num_kv_expired_reqs_total[5m]))", "vllm==0.14.1")
    assert ray == judged("sum(rate(vllm:nixl_num_kv_expired_reqs_total[5m]))", "vllm==0.14.1")
    assert ray[0] == "empty"


def judged(expr: str, target: str) -> tuple[str, list[str]]:
    result = offline(target).check(Query("test", "expr", expr))
    return result.status, result.rules


def test_kuberay_dashboard_for_ray_2492_on_vllm_0101_and_0110() -> None:
    got = results("vllm==0.10.1", RAY_2492)
    assert {w: s for w, s in got.items() if s[0] != "ok"} == {
        # V0's gauges (vllm/engine/metrics.py:89 and :78 of 0.7.3), gone from 0.8.0
        "panel 'vLLM: Cache Utilization' query B": ("empty", ["removed"]),
        "panel 'vLLM: Scheduler State' query B": ("empty", ["removed"]),
    }
    assert len(got) == 45
    # on 0.11.0 Ray writes every one of them with `_`: the colon form is empty throughout
    after = results("vllm==0.11.0", RAY_2492)
    assert {status for status, _ in after.values()} == {"empty"}
    assert {rule for _, rules in after.values() for rule in rules} == {"wrong-separator"}


def test_a_colon_name_on_vllm_011_is_fixed_to_the_underscore_and_the_successor() -> None:
    checker = offline("vllm==0.11.0")
    (query,) = [q for q in file_queries(RAY_2492) if q.where == "panel 'vLLM: Cache Utilization' query A"]
    result = checker.check(query)
    assert result.status == "empty"
    # vllm:gpu_cache_usage_perc is hidden from 0.11.0 for vllm:kv_cache_usage_perc (its HELP text names it)
    assert result.renames == {"ray_vllm:gpu_cache_usage_perc": "ray_vllm_kv_cache_usage_perc"}
    assert result.reasons[0].startswith(
        "ray_vllm:gpu_cache_usage_perc: Ray Serve LLM writes vLLM 0.11.0's vllm:gpu_cache_usage_perc as "
        "ray_vllm_gpu_cache_usage_perc: from vLLM 0.11.0 on, vLLM's Ray metrics write '_' for ':' "
        "(vllm/v1/metrics/ray_wrappers.py:70-80, vLLM PR #25439); and vllm:gpu_cache_usage_perc is hidden by "
        "vLLM 0.11.0 (deprecated for vllm:kv_cache_usage_perc"
    )


def test_the_underscore_form_before_vllm_011_is_empty_with_the_colon_as_fix() -> None:
    result = offline("vllm==0.10.2").check(Query("test", "expr", "sum(rate(ray_vllm_prompt_tokens_total[5m]))"))
    assert (result.status, result.rules) == ("empty", ["wrong-separator"])
    assert result.fix == "sum(rate(ray_vllm:prompt_tokens_total[5m]))"


def test_a_ray_name_with_no_vllm_release_to_judge_by_fails_strict() -> None:
    result = offline("sglang==0.5.23").check(Query("test", "expr", "sum(ray_vllm_num_requests_running)"))
    assert (result.status, result.rules) == ("unjudged", [NOT_JUDGED])
    assert result.reasons == [
        "ray_vllm_num_requests_running: not judged: Ray Serve LLM's re-export of vLLM; no --against for vLLM"
    ]
    (sel,) = selectors("ray_vllm_num_requests_running")
    assert offline("vllm==0.15.0").verdict(sel).state == "data"


# --- OpenCost's inference cost: `llm_*` like ours, never ours -------------------------------------------------
# Facts from opencost/opencost pkg/inferencecost: collector.go at 046782e631365e2b05a9cefff098bf0addb838ac
# (CollectMetrics queries vllm:prompt_tokens_total, vllm:generation_tokens_total, the prefill and
# per-output-token time sums and vllm:prefix_cache_hits_total; combineMetrics: CachedTokens = CacheHitBlocks *
# BlockSize), calculator.go (hasCompleteTimingData, else calculateMultiplierSplit); vLLM's side from
# data/vllm_metrics_by_version.json (prefix_cache_hits_total "in terms of number of cached tokens" from 0.9.2,
# vllm/v1/metrics/loggers.py:227; request_time_per_output_token_seconds from 0.11.0).

CACHE_WARNING = (
    "OpenCost's inference cost (pkg/inferencecost, opencost/opencost PR #3845) multiplies "
    "vllm:prefix_cache_hits_total by the KV-cache block size it is given (collector.go combineMetrics at "
    "046782e6), but vLLM 0.15.0 counts it in tokens: its cached tokens come out block-size times too many and its "
    "effective input tokens too few (clamped at 0), so the split's input cost per million tokens is too high, or 0"
)


def test_our_catalogue_never_writes_opencosts_names() -> None:
    ours = {spec.name for spec in catalogue.ALL} | set(catalogue.sample_names())
    assert not ours & opencost.NAMES


def test_opencosts_input_cost_warns_of_the_block_size_on_vllm_015() -> None:
    result = offline("vllm==0.15.0").check(Query("test", "expr", 'llm_cost_per_million_tokens{phase="prompt"}'))
    assert (result.status, result.rules) == ("warning", ["opencost-input"])
    assert result.reasons == [f"llm_cost_per_million_tokens: {CACHE_WARNING}"]
    # the blended cost (no phase) and the hourly total do not use the cached-token count
    assert judged('llm_cost_per_million_tokens{phase=""}', "vllm==0.15.0") == ("ok", [])
    assert judged("sum(llm_total_cost)", "vllm==0.15.0") == ("ok", [])
    assert judged('llm_cost_per_million_tokens{phase="generation"}', "vllm==0.15.0") == ("ok", [])
    assert judged("llm_input_cost_per_million_tokens", "vllm==0.15.0") == ("warning", ["opencost-input"])


def test_opencosts_split_falls_back_to_a_multiplier_before_vllm_011() -> None:
    result = offline("vllm==0.10.1").check(Query("test", "expr", 'llm_cost_per_million_tokens{phase=~"gen.*"}'))
    assert (result.status, result.rules) == ("warning", ["opencost-input"])
    assert result.reasons == [
        "llm_cost_per_million_tokens: vLLM 0.10.1 writes no vllm:request_time_per_output_token_seconds_sum: "
        "OpenCost's inference cost (pkg/inferencecost, opencost/opencost PR #3845) splits input and output cost by "
        "a fixed multiplier instead of the prefill and decode time"
    ]


def test_opencosts_names_are_not_judged_without_a_vllm_release() -> None:
    result = offline("sglang==0.5.23").check(Query("test", "expr", "llm_total_cost"))
    assert (result.status, result.rules) == ("unjudged", [])
    assert result.reasons == [
        "llm_total_cost: not judged: a name of OpenCost's inference cost (pkg/inferencecost, opencost/opencost PR "
        "#3845), computed from vLLM's: no --against for vLLM"
    ]


def test_sarif_describes_the_rules_producers_use() -> None:
    # SARIF viewers show a result's rule by its id: each one used here must be described
    assert {"opencost-input", "wrong-separator"} <= {rule.id for rule in RULES}
