"""Every engine under the canonical names: release tables, golden mappings per release, detection, alarm."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.catalogue import engine as m
from exporter.engines import engine_releases, mapping, registry
from exporter.engines.collector import Outcome, build_families
from exporter.engines.history import histories
from exporter.engines.targets import from_url
from exporter.exposition import render
from tests import golden
from tests.engines.engine_bodies import GENERATED, body

GOLDEN = Path(__file__).parent / "golden" / "engines"


def exposition(engine: str, text: str, version: str | None) -> str:
    spec = registry.get(engine)
    identity = {"namespace": "demo", "pod": f"{engine}-0", "engine": engine}
    mapped = mapping.map_body(text, identity, version, spec.releases(), engine=spec)
    target = from_url("http://10.0.0.1:8000", "demo", f"{engine}-0", engine)
    out = render(build_families([Outcome(target, mapped, "", 0.0, engine)]))
    return re.sub(r"(llm_engine_scrape_duration_seconds\{[^}]*\}) .*", r"\1 <masked>", out)


def boundary_releases(engine: str) -> list[str]:
    """Oldest, newest, and the releases on each side of every rename or removal of a mapped source."""
    versions = [r.version for r in registry.get(engine).releases().releases]
    chosen = {versions[0], versions[-1]}
    for h in histories()[engine]:
        for edge in (h.introduced, h.removed):
            if edge is not None and edge in versions:
                i = versions.index(edge)
                chosen.update(versions[max(0, i - 1) : i + 1])
    return [v for v in versions if v in chosen]


CASES = [(engine, version) for engine in GENERATED for version in boundary_releases(engine)]


def test_derived_release_tables_are_current() -> None:
    assert engine_releases.main([]) == 0, "run python -m exporter.engines.engine_releases --write"


@pytest.mark.parametrize("engine", GENERATED)
def test_every_source_is_a_name_some_release_exposes(engine: str) -> None:
    spec = registry.get(engine)
    known = spec.releases().known
    assert {s for s in spec.source_families() if s not in known} == set()


@pytest.mark.parametrize(("engine", "version"), CASES)
def test_golden_mapping_per_release(engine: str, version: str) -> None:
    # LMDeploy and llama.cpp sdist builds have no usable version: their release is inferred from the names
    answered = None if engine in ("lmdeploy", "llamacpp") else version
    text = exposition(engine, body(engine, version), answered)
    golden.check(GOLDEN / f"{engine}-{version}.prom", text)
    # a release's full name set is never reported as missing anything: the table says what it exposes
    assert not re.search(r"^llm_metric_present\{.*\} 0$", text, re.M)


def test_renames_are_followed_release_by_release() -> None:
    queue = {v: exposition("sglang", body("sglang", v), v) for v in ("0.5.2", "0.5.3")}
    assert 'source="sglang:queue_time_s"' in queue["0.5.2"]
    assert 'source="sglang:queue_time_seconds"' in queue["0.5.3"]
    old, new = (exposition("trtllm", body("trtllm", v), v) for v in ("1.2.1", "1.4.0rc1"))
    assert 'llm_request_duration_seconds_count{namespace="demo",pod="trtllm-0",engine="trtllm",model="tiny"' in old
    assert 'source="e2e_request_latency_seconds"' in old and 'source="trtllm_e2e_request_latency_seconds"' in new


def test_honest_semantics_leave_different_quantities_absent() -> None:
    tgi = exposition("tgi", body("tgi", "3.3.7"), "3.3.7")
    assert "llm_time_to_first_token_seconds_bucket" not in tgi  # TGI has none
    assert "llm_inter_token_latency_seconds_bucket" not in tgi  # its mean per token includes prefill
    assert 'llm_requests_finished_total{namespace="demo",pod="tgi-0",engine="tgi"' in tgi  # counter without _total
    old_tgi = exposition("tgi", body("tgi", "0.4.0"), "0.4.0")
    assert "llm_request_duration_seconds_bucket" not in old_tgi  # a summary is not a histogram
    sglang_old = exposition("sglang", body("sglang", "0.4.3"), "0.4.3")
    assert "llm_inter_token_latency_seconds_bucket" not in sglang_old  # per-request mean before 0.4.3.post3
    assert "llm_kv_cache_usage_ratio{" not in exposition("sglang", body("sglang", "0.5.23"), "0.5.23")
    llama = exposition("llamacpp", body("llamacpp", "0c1e57098"), None)
    assert "llm_prompt_tokens_total{" not in llama  # llama.cpp's excludes prompt-cache hits
    assert "llm_kv_cache_usage_ratio{" not in llama  # removed in 2025
    assert "llm_kv_cache_usage_ratio{" in exposition("llamacpp", body("llamacpp", "7841fc723"), None)


def test_lmdeploy_release_is_inferred_from_its_renamed_counters() -> None:
    for version in ("0.12.0", "0.12.2", "0.14.0"):
        text = exposition("lmdeploy", body("lmdeploy", version), None)
        info = re.search(r'llm_engine_info\{[^}]*version="([^"]*)",version_source="([^"]*)"', text)
        assert info is not None and info.group(2) == "inferred"
        assert "llm_metric_present" in text


@pytest.mark.parametrize("engine", [e for e in GENERATED if registry.get(e).lazy_series])
def test_a_fresh_idle_lazy_engine_raises_no_missing_metric(engine: str) -> None:
    spec = registry.get(engine)
    newest = spec.releases().newest.version
    # before the first request only the families that need no labelled child exist (here: none but gauges)
    gauges = {r for r in spec.releases().newest.expected if "running" in r or "queue" in r or "waiting" in r}
    idle = body(engine, newest, gauges).replace(" 3\n", " 0\n")
    assert not re.search(r"^llm_metric_present\{.*\} 0$", exposition(engine, idle, newest), re.M)
    # once it has served a request, a missing source is news again
    served = body(engine, newest, gauges | set(spec.activity))
    assert re.search(r"^llm_metric_present\{.*\} 0$", exposition(engine, served, newest), re.M)


def test_llamacpp_reports_missing_at_once() -> None:
    """llama.cpp prints every family once --metrics is on: no grace while idle."""
    text = exposition("llamacpp", body("llamacpp", "0c1e57098", {"llamacpp:requests_processing"}), None)
    assert re.search(r'^llm_metric_present\{.*source="llamacpp:tokens_predicted_total".*\} 0$', text, re.M)


@pytest.mark.parametrize(("engine", "version"), CASES)
def test_detection_from_the_body(engine: str, version: str) -> None:
    text = body(engine, version)
    detected = registry.detect(text)
    if text == "\n":
        assert detected is None  # TGI 0.2.x and LMDeploy 0.9.0/0.9.1 expose no metrics at all
    elif engine == "trtllm" and version in ("1.1.0", "1.2.0", "1.2.1"):
        assert detected is None  # unprefixed names: its /prometheus/metrics path tells (tested in test_fakes)
    else:
        assert detected is registry.get(engine)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_mapping_never_reports_a_series_the_release_does_not_expose(data: st.DataObject) -> None:
    engine = data.draw(st.sampled_from(GENERATED))
    spec = registry.get(engine)
    release = data.draw(st.sampled_from(spec.releases().releases))
    if not release.expected:
        return
    names = set(data.draw(st.sets(st.sampled_from(sorted(release.expected)))))
    text = body(engine, release.version, names)
    mapped = mapping.map_body(text, {"engine": engine}, None, spec.releases(), engine=spec)
    for canonical, (source, found) in mapped.present.items():
        assert found == (source in names), (canonical.name, source)
    for canonical, samples in mapped.samples.items():
        assert samples and mapped.present[canonical][1], canonical.name
    assert set(mapped.samples) <= set(m.MAPPED)


def test_per_engine_docs_are_current() -> None:
    from exporter.engines import docs

    assert docs.main([]) == 0, "run python -m exporter.engines.docs --write"


def test_mappings_table_per_engine() -> None:
    from exporter.engines.table import render_table

    def row(table: str, canonical: str) -> str:
        found = re.search(rf"^\S+ +{canonical} +(\S+)$", table, re.M)
        assert found is not None, table
        return found.group(1)

    assert row(render_table("0.5.2", engine="sglang"), "llm_request_queue_time_seconds") == "sglang:queue_time_s"
    assert row(render_table("0.5.3", engine="sglang"), "llm_request_queue_time_seconds") == "sglang:queue_time_seconds"
    assert row(render_table("0c1e57098", engine="llamacpp"), "llm_kv_cache_usage_ratio") == "-"
    assert (
        row(render_table("7841fc723", engine="llamacpp"), "llm_kv_cache_usage_ratio") == "llamacpp:kv_cache_usage_ratio"
    )


@pytest.mark.parametrize(
    ("answered", "label", "placed"),
    [
        ("b11434-9f4a0c2", "b11434", "0c1e57098"),  # newer than the table: its newest release
        ("b11312-0c1e570", "b11312", "0c1e57098"),
        ("b9976-e3546c7", "b9976", "e3546c794"),
        ("b9900-abcdef0", "b9900", "b3fed31b9"),  # between two numbered releases: the older one
        ("b9445-af6528e", "b9445", "af6528e6d"),
    ],
)
def test_a_llamacpp_release_build_is_placed_by_its_build_number(answered: str, label: str, placed: str) -> None:
    spec = registry.get("llamacpp")
    # the body of the release it is placed at: no family of another release is expected
    text = exposition("llamacpp", body("llamacpp", placed), answered)
    assert f'engine="llamacpp",version="{label}",version_source="endpoint"}} 1' in text
    release, version, source = mapping.choose_release(spec.releases(), answered, set(), spec)
    assert (release.version, version, source) == (placed, label, "endpoint")
    assert not re.search(r"^llm_metric_present\{.*\} 0$", text, re.M)


def test_a_llamacpp_build_older_than_every_numbered_release_is_placed_by_its_names() -> None:
    spec = registry.get("llamacpp")
    text = exposition("llamacpp", body("llamacpp", "7841fc723"), "b4000-1a2b3c4")
    assert 'engine="llamacpp",version="b4000",version_source="endpoint"} 1' in text  # what it said
    assert "llm_kv_cache_usage_ratio{" in text  # the 7841fc723 mapping, told by its names
    assert not re.search(r"^llm_metric_present\{.*\} 0$", text, re.M)
    for said in ("b0-unknown", "b0-9f4a0c2", "11434", "b11434x", "version b11434"):
        assert spec.version_build is not None and spec.version_build(said) is None, said


def test_numbered_llamacpp_releases_are_in_build_order() -> None:
    releases = registry.get("llamacpp").releases().releases
    builds = [r.build for r in releases if r.build is not None]
    assert len(builds) == 5 and builds == sorted(builds)
    numbered = [r.version for r in releases if r.build is not None]
    assert numbered == [r.version for r in releases[-5:]], "the numbered releases are the newest ones"
