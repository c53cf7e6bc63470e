from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from exporter.catalogue import engine as m
from exporter.engines import mapping, vllm
from exporter.engines.collector import Outcome, build_families
from exporter.engines.engine_releases import VLLM_SOURCE as SOURCE
from exporter.engines.releases import load
from exporter.engines.targets import from_url
from exporter.exposition import render
from exporter.versions import parse_version
from tests import golden
from tests.engines import derived
from tests.engines.engine_servers import recorded

GOLDEN = Path(__file__).parent / "golden"
ID = {"namespace": "demo", "pod": "vllm-0", "engine": "vllm"}


def exposition(body: str, version: str | None) -> str:
    mapped = mapping.map_body(body, ID, version, load("vllm"), engine=vllm.SPEC)
    return render(
        build_families([Outcome(from_url("http://10.0.0.1:8000", "demo", "vllm-0", "vllm"), mapped, "", 0.0)])
    )


def check_golden(name: str, text: str) -> None:
    text = re.sub(r"(llm_engine_scrape_duration_seconds\{[^}]*\}) .*", r"\1 <masked>", text)
    golden.check(GOLDEN / name, text)


def samples_of(text: str, name: str) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name)
    }


def test_golden_0_32_0() -> None:
    check_golden("vllm-0.32.0.prom", exposition(recorded("0.32.0"), "0.32.0"))


def test_golden_0_27_1_recorded() -> None:
    check_golden("vllm-0.27.1.prom", exposition(recorded("0.27.1"), "0.27.1"))
    assert " 0\n" not in "".join(
        line + "\n"
        for line in exposition(recorded("0.27.1"), "0.27.1").splitlines()
        if line.startswith("llm_metric_present")
    )


def test_golden_0_8_2_derived_names() -> None:
    check_golden("vllm-0.8.2.prom", exposition(derived.body_0_8_2(), "0.8.2"))


def test_old_and_new_names_give_the_same_canonical_values() -> None:
    new = exposition(recorded("0.32.0"), "0.32.0")
    old = exposition(derived.body_0_8_2(), "0.8.2")
    for spec in (m.KV_CACHE_USAGE, m.INTER_TOKEN_LATENCY, m.PREFIX_CACHE_HITS, m.TIME_TO_FIRST_TOKEN):
        ours = {k.replace(',dp_rank="0"', ',dp_rank=""'): v for k, v in samples_of(new, spec.name).items()}
        assert ours == samples_of(old, spec.name), spec.name
        assert ours


def test_both_names_emitted_prefers_the_new_one_without_duplicates() -> None:
    text = exposition(derived.body_0_10_2(), "0.10.2")
    assert 'source="vllm:kv_cache_usage_perc",version="0.10.2"} 1' in text
    assert len(samples_of(text, "llm_kv_cache_usage_ratio")) == 1


def test_silent_rename_is_present_0_and_absent_never_0() -> None:
    body = recorded("0.32.0").replace("vllm:kv_cache_usage_perc", "vllm:kv_cache_usage_fraction")
    text = exposition(body, "0.32.0")
    assert (
        'llm_metric_present{namespace="demo",pod="vllm-0",engine="vllm",metric="llm_kv_cache_usage_ratio",'
        'source="vllm:kv_cache_usage_perc",version="0.32.0"} 0'
    ) in text
    assert "llm_kv_cache_usage_ratio{" not in text and "# TYPE llm_kv_cache_usage_ratio" not in text
    assert 'llm_engine_unmapped_metrics{namespace="demo",pod="vllm-0",engine="vllm"} 1' in text


def test_unmapped_counts_the_declared_families_no_release_knows() -> None:
    """A counter declared without `_total` is the counter (present before its first sample, as prometheus_client
    writes a labelled one), `X_created` (creation times) is `X`; the rest is new."""
    body = (
        "# TYPE vllm:num_preemptions counter\n"
        "# TYPE vllm:num_preemptions_created gauge\nvllm:num_preemptions_created 1.7e9\n"
        "# TYPE vllm:time_to_first_token_seconds_created gauge\nvllm:time_to_first_token_seconds_created 1.7e9\n"
        "# TYPE vllm:brand_new gauge\nvllm:brand_new 1\n# TYPE vllm:brand_new_created gauge\nvllm:brand_new_created 1\n"
    )
    text = exposition(body, "0.32.0")
    assert 'llm_engine_unmapped_metrics{namespace="demo",pod="vllm-0",engine="vllm"} 2' in text
    assert (
        'llm_metric_present{namespace="demo",pod="vllm-0",engine="vllm",metric="llm_preemptions_total",'
        'source="vllm:num_preemptions_total",version="0.32.0"} 1'
    ) in text


def test_version_inferred_without_endpoint_and_newer_release_uses_newest_mapping() -> None:
    mapped = mapping.map_body(derived.body_0_8_2(), ID, None, load("vllm"), engine=vllm.SPEC)
    assert mapped.version_source == "inferred"
    assert mapped.present[m.KV_CACHE_USAGE] == ("vllm:gpu_cache_usage_perc", True)
    future = mapping.map_body(recorded("0.32.0"), ID, "0.99.1", load("vllm"), engine=vllm.SPEC)
    assert future.version == "0.99.1" and future.present[m.INTER_TOKEN_LATENCY][1]
    assert load("vllm").at(parse_version("0.99.1") or ()) == load("vllm").newest


@pytest.mark.parametrize(
    ("version", "kv", "itl", "prefix"),
    [
        ("0.6.0", "vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds", None),
        (
            "0.8.5",
            "vllm:gpu_cache_usage_perc",
            "vllm:time_per_output_token_seconds",
            "vllm:gpu_prefix_cache_hits_total",
        ),
        ("0.9.2", "vllm:kv_cache_usage_perc", "vllm:time_per_output_token_seconds", "vllm:prefix_cache_hits_total"),
        ("0.10.2", "vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds", "vllm:prefix_cache_hits_total"),
        ("0.11.0", "vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds", "vllm:prefix_cache_hits_total"),
        ("0.33.0", "vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds", "vllm:prefix_cache_hits_total"),
    ],
)
def test_renames_land_where_the_history_says(version: str, kv: str, itl: str, prefix: str | None) -> None:
    expected = mapping.expected_sources(load("vllm").at(parse_version(version) or ()), vllm.SPEC)
    assert expected[m.KV_CACHE_USAGE] == kv
    assert expected[m.INTER_TOKEN_LATENCY] == itl
    assert expected.get(m.PREFIX_CACHE_HITS) == prefix


def test_mapping_is_right_for_every_release_in_the_source_table() -> None:
    """Against the raw per-release table: every expected source is a default series of that release, and a
    canonical metric is only left unmapped where the release has none of its sources."""
    source = json.loads(SOURCE.read_text())
    for version, metrics in source["versions"].items():
        default = {x["name"] for x in metrics if x["enabled_when"] == "always" and not x.get("hidden_since")}
        hidden = {x["name"] for x in metrics if x.get("hidden_since")}
        expected = mapping.expected_sources(load("vllm").at(parse_version(version) or ()), vllm.SPEC)
        for spec, candidates in vllm.SPEC.sources.items():
            chosen = expected.get(spec)
            available = [c for c in candidates if c in default and c not in hidden]
            assert chosen == (available[0] if available else None), (version, spec.name)
            assert chosen != "vllm:request_time_per_output_token_seconds"


def _engine_lines(text: str, *names: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(names)]


def test_series_cap_drops_whole_series_groups_and_says_so() -> None:
    # 3 models x (2 buckets + sum + count) = 12 histogram samples, 3 gauges; a cap of 10 fits the 3 gauges and
    # one whole histogram group (4), not a second one: never half a histogram
    body = "# TYPE vllm:num_requests_waiting gauge\n# TYPE vllm:time_to_first_token_seconds histogram\n"
    for model in ("a", "b", "c"):
        body += f'vllm:num_requests_waiting{{engine="0",model_name="{model}"}} 1\n'
    for model in ("a", "b", "c"):
        body += (
            f'vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.1",model_name="{model}"}} 1\n'
            f'vllm:time_to_first_token_seconds_bucket{{engine="0",le="+Inf",model_name="{model}"}} 2\n'
            f'vllm:time_to_first_token_seconds_sum{{engine="0",model_name="{model}"}} 0.5\n'
            f'vllm:time_to_first_token_seconds_count{{engine="0",model_name="{model}"}} 2\n'
        )
    mapped = mapping.map_body(body, ID, "0.32.0", load("vllm"), mapping.Limits(max_series=10), engine=vllm.SPEC)
    text = render(
        build_families([Outcome(from_url("http://10.0.0.1:8000", "demo", "vllm-0", "vllm"), mapped, "", 0.0)])
    )
    head = 'namespace="demo",pod="vllm-0",engine="vllm"'
    assert _engine_lines(text, "llm_time_to_first_token_seconds") == [
        f'llm_time_to_first_token_seconds_bucket{{{head},model="a",dp_rank="0",le="0.1"}} 1',
        f'llm_time_to_first_token_seconds_bucket{{{head},model="a",dp_rank="0",le="+Inf"}} 2',
        f'llm_time_to_first_token_seconds_sum{{{head},model="a",dp_rank="0"}} 0.5',
        f'llm_time_to_first_token_seconds_count{{{head},model="a",dp_rank="0"}} 2',
    ]
    assert len(_engine_lines(text, "llm_requests_waiting{")) == 3
    assert _engine_lines(text, "llm_engine_series_dropped{") == [
        f'llm_engine_series_dropped{{{head},reason="series_limit"}} 8',
        f'llm_engine_series_dropped{{{head},reason="label_too_long"}} 0',
        f'llm_engine_series_dropped{{{head},reason="duplicate"}} 0',
    ]


def test_over_long_label_values_and_duplicates_are_dropped_nan_is_kept() -> None:
    long_name = "lora-" + "x" * 40
    body = (
        "# TYPE vllm:num_requests_waiting gauge\n"
        'vllm:num_requests_waiting{engine="0",model_name="m"} NaN\n'
        'vllm:num_requests_waiting{engine="0",model_name="m"} 7\n'
        f'vllm:num_requests_waiting{{engine="0",model_name="{long_name}"}} 2\n'
        'vllm:num_requests_waiting{engine="1",model_name="m"} +Inf\n'
    )
    mapped = mapping.map_body(
        body, ID, "0.32.0", load("vllm"), mapping.Limits(max_label_value_length=32), engine=vllm.SPEC
    )
    text = render(
        build_families([Outcome(from_url("http://10.0.0.1:8000", "demo", "vllm-0", "vllm"), mapped, "", 0.0)])
    )
    head = 'namespace="demo",pod="vllm-0",engine="vllm"'
    assert _engine_lines(text, "llm_requests_waiting{") == [
        f'llm_requests_waiting{{{head},model="m",dp_rank="0"}} NaN',  # the first of two: an engine's NaN stays NaN
        f'llm_requests_waiting{{{head},model="m",dp_rank="1"}} +Inf',
    ]
    assert _engine_lines(text, "llm_engine_series_dropped{") == [
        f'llm_engine_series_dropped{{{head},reason="series_limit"}} 0',
        f'llm_engine_series_dropped{{{head},reason="label_too_long"}} 1',
        f'llm_engine_series_dropped{{{head},reason="duplicate"}} 1',
    ]


@pytest.mark.parametrize(("text", "key"), [("0.10.1.1", (0, 10, 1, 1)), ("v0.11.2+cpu", (0, 11, 2)), ("²", None),
                                           ("1" * 5000, None), ("0.1²", (0,))])  # fmt: skip
def test_parse_version_takes_ascii_digits_only(text: str, key: tuple[int, ...] | None) -> None:
    assert parse_version(text) == key


def test_an_odd_le_value_is_escaped_not_copied() -> None:
    body = 'vllm:time_to_first_token_seconds_bucket{engine="0",le="a\\"b",model_name="m"} 1\n'
    mapped = mapping.map_body(
        body, ID, "²", load("vllm"), engine=vllm.SPEC
    )  # a /version answer that is no version: inferred
    assert mapped.version_source == "inferred"
    (sample,) = mapped.samples[m.TIME_TO_FIRST_TOKEN]
    assert sample[1].endswith(',le="a\\"b"}')


def test_vllm_0_34_0_renames_nothing_and_its_new_families_are_not_expected() -> None:
    """0.34.0 adds request_render_duration_seconds (registered on first render) and two KV-offload tiering
    families (only with the tiering connector): the mapping is 0.33.0's, and none of them is expected."""
    releases = load("vllm")
    new, old = (next(r for r in releases.releases if r.version == v) for v in ("0.34.0", "0.33.0"))
    assert mapping.expected_sources(new, vllm.SPEC) == mapping.expected_sources(old, vllm.SPEC)
    added = {
        "vllm:request_render_duration_seconds",
        "vllm:kv_offload_tiering_deferred_release_chunks",
        "vllm:kv_offload_tiering_deferred_release_hold_seconds",
    }
    assert added <= releases.known and not added & new.expected
    assert new.expected == old.expected


def test_golden_0_34_0_rust_frontend() -> None:
    """The Rust frontend's OpenMetrics body (base-name TYPE lines, `# EOF`) under its own release table: the
    same canonical values as the Python frontend's body it was derived from, nothing missing, nothing unknown."""
    rust = exposition(derived.body_rust_frontend("0.34.0"), "0.34.0")
    check_golden("vllm-0.34.0-rust-frontend.prom", rust)
    assert not re.search(r"^llm_metric_present\{.*\} 0$", rust, re.M)
    assert 'llm_engine_unmapped_metrics{namespace="demo",pod="vllm-0",engine="vllm"} 0' in rust
    python = exposition(recorded("0.32.0"), "0.34.0")
    for name in ("llm_generation_tokens_total", "llm_prompt_tokens_total", "llm_time_to_first_token_seconds_count"):
        assert samples_of(rust, name) == samples_of(python, name) != {}


def test_the_rust_frontend_is_told_by_its_body_and_has_its_own_families() -> None:
    assert vllm.frontend(derived.body_rust_frontend("0.34.0")) == vllm.RUST_FRONTEND
    assert vllm.frontend(recorded("0.32.0")) is None  # the Python frontend's text format
    releases = load("vllm")
    python = next(r for r in releases.releases if r.version == "0.34.0")
    rust = releases.flavoured(vllm.RUST_FRONTEND, python)
    assert rust.version == "0.34.0" and rust is not python
    lacking = {"vllm:admission_rejections_total", "vllm:mm_cache_hits_total", "vllm:mm_cache_queries_total"}
    assert lacking <= python.expected and not lacking & rust.expected
    assert not {n for n in rust.expected if n.startswith("vllm:kv_offload_")}
    # 0.33.0's Rust frontend had neither cache_config_info nor engine_sleep_state yet; older: the oldest table
    older = releases.flavoured(vllm.RUST_FRONTEND, next(r for r in releases.releases if r.version == "0.33.0"))
    assert {"vllm:cache_config_info", "vllm:engine_sleep_state"} & older.expected == set()
    assert releases.flavoured(vllm.RUST_FRONTEND, releases.releases[0]).version == "0.33.0"


def test_a_family_the_rust_frontend_registers_is_still_missed_when_absent() -> None:
    body = "\n".join(
        line for line in derived.body_rust_frontend("0.34.0").splitlines() if "vllm:num_requests_running" not in line
    )
    text = exposition(body + "\n", "0.34.0")
    assert re.search(r'^llm_metric_present\{.*source="vllm:num_requests_running".*\} 0$', text, re.M)
