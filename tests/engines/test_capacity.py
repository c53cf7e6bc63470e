"""Capacity in tokens: the KV cache, lengths, compute and load shed, from the engines' own counts.

Exact values against the recorded vLLM 0.32.0 bodies (tests/fixtures/vllm), with the flag-gated families
both ways: mapped when the engine counts them, and never reported missing when the flag is off.
"""

from __future__ import annotations

import re

from exporter.catalogue import engine as m
from exporter.engines import mapping, served, vllm
from exporter.engines.collector import Outcome, build_families
from exporter.engines.releases import load
from exporter.engines.targets import from_url
from exporter.exposition import render
from tests.engines.engine_servers import FIXTURES, recorded

ID = {"namespace": "demo", "pod": "vllm-0", "engine": "vllm"}
HEAD = 'namespace="demo",pod="vllm-0",engine="vllm"'


def exposition(body: str, version: str | None = "0.32.0", models: tuple[served.ServedModel, ...] = ()) -> str:
    mapped = mapping.map_body(body, ID, version, load("vllm"), engine=vllm.SPEC)
    target = from_url("http://10.0.0.1:8000", "demo", "vllm-0", "vllm")
    return render(build_families([Outcome(target, mapped, "", 0.0, "vllm", models)]))


def lines(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{") or line.startswith(name + " ")]


def present(text: str, metric: str) -> list[str]:
    return [line for line in lines(text, "llm_metric_present") if f'metric="{metric}"' in line]


def cache_info_line(body: str) -> str:
    (line,) = [row for row in body.splitlines() if row.startswith("vllm:cache_config_info{")]
    return line


def test_kv_capacity_is_the_group_aware_size_vllm_states() -> None:
    text = exposition(recorded("0.32.0"))
    # cache_config_info says kv_cache_size_tokens="524288" (= num_gpu_blocks 4096 x block_size 128 here)
    assert lines(text, "llm_kv_cache_capacity_tokens") == [
        f'llm_kv_cache_capacity_tokens{{{HEAD},model="",dp_rank="0"}} 524288'
    ]
    assert present(text, "llm_kv_cache_capacity_tokens") == [
        f'llm_metric_present{{{HEAD},metric="llm_kv_cache_capacity_tokens",source="vllm:cache_config_info",'
        'version="0.32.0"} 1'
    ]


def test_kv_capacity_falls_back_to_blocks_times_block_size_but_never_for_a_hybrid_model() -> None:
    body = recorded("0.32.0")
    line = cache_info_line(body)
    older = line.replace('kv_cache_size_tokens="524288",', "")  # releases before the group-aware count
    text = exposition(body.replace(line, older.replace('num_gpu_blocks="4096"', 'num_gpu_blocks="1000"')))
    assert lines(text, "llm_kv_cache_capacity_tokens") == [
        f'llm_kv_cache_capacity_tokens{{{HEAD},model="",dp_rank="0"}} 128000'
    ]
    hybrid = older.replace('mamba_block_size="None"', 'mamba_block_size="528"')
    text = exposition(body.replace(line, hybrid))
    assert lines(text, "llm_kv_cache_capacity_tokens") == []  # blocks of two sizes: not tokens
    assert present(text, "llm_kv_cache_capacity_tokens") == []  # not a rename: no alarm
    unsized = older.replace('num_gpu_blocks="4096"', 'num_gpu_blocks="None"')
    assert lines(exposition(body.replace(line, unsized)), "llm_kv_cache_capacity_tokens") == []


def test_kv_capacity_labels_keep_only_the_data_parallel_rank() -> None:
    rows = vllm.kv_capacity_tokens(
        [((("block_size", "16"), ("engine", "1"), ("num_gpu_blocks", "10"), ("model_name", "m")), 1.0)]
    )
    assert rows == [((("engine", "1"), ("model_name", "m")), 160.0)]
    assert vllm.kv_capacity_tokens([((("block_size", "16"), ("num_gpu_blocks", "1e3")), 1.0)]) == []


def test_length_histograms_count_what_vllm_counted() -> None:
    body, text = recorded("0.32.0"), exposition(recorded("0.32.0"))
    for ours, theirs in (("llm_request_prompt_tokens", "vllm:request_prompt_tokens"),
                         ("llm_request_generation_tokens", "vllm:request_generation_tokens")):  # fmt: skip
        for suffix in ("_count", "_sum"):
            (source,) = [r for r in body.splitlines() if r.startswith(theirs + suffix + "{")]
            (mapped,) = lines(text, ours + suffix)
            assert float(mapped.rsplit(" ", 1)[1]) == float(source.rsplit(" ", 1)[1]) > 0
        buckets = lines(text, ours + "_bucket")
        assert len(buckets) == len([r for r in body.splitlines() if r.startswith(theirs + "_bucket{")]) > 1
    assert lines(text, "llm_request_prompt_tokens_count") == [
        f'llm_request_prompt_tokens_count{{{HEAD},model="tiny",dp_rank="0"}} 6'
    ]


def test_waiting_by_reason_rejections_cached_tokens_and_sleep_from_0_32_0() -> None:
    text = exposition(recorded("0.32.0"))
    assert lines(text, "llm_requests_waiting_by_reason") == [
        f'llm_requests_waiting_by_reason{{{HEAD},model="tiny",dp_rank="0",reason="capacity"}} 0',
        f'llm_requests_waiting_by_reason{{{HEAD},model="tiny",dp_rank="0",reason="deferred"}} 0',
    ]
    # admission_rejections_total has no `engine` label in vLLM: dp_rank is empty
    assert lines(text, "llm_requests_rejected_total") == [
        f'llm_requests_rejected_total{{{HEAD},model="tiny",dp_rank="",reason="max_num_queued_reqs"}} 0',
        f'llm_requests_rejected_total{{{HEAD},model="tiny",dp_rank="",reason="max_num_queued_tokens"}} 0',
    ]
    assert lines(text, "llm_prompt_tokens_cached_total") == [
        f'llm_prompt_tokens_cached_total{{{HEAD},model="tiny",dp_rank="0"}} 0'
    ]
    assert lines(text, "llm_engine_asleep") == [f'llm_engine_asleep{{{HEAD},model="tiny",dp_rank="0"}} 0']


def test_a_sleeping_engine_is_asleep_at_either_level() -> None:
    body = recorded("0.32.0")
    for level in ("weights_offloaded", "discard_all"):
        asleep = body.replace('sleep_state="awake"} 1.0', 'sleep_state="awake"} 0.0').replace(
            f'sleep_state="{level}"}} 0.0', f'sleep_state="{level}"}} 1.0'
        )
        assert lines(exposition(asleep), "llm_engine_asleep") == [
            f'llm_engine_asleep{{{HEAD},model="tiny",dp_rank="0"}} 1'
        ]


def test_new_families_only_from_the_releases_that_have_them() -> None:
    old = exposition(recorded("0.27.1"), "0.27.1")
    assert lines(old, "llm_requests_rejected_total") == []  # admission control is 0.32+
    assert present(old, "llm_requests_rejected_total") == []  # and 0.27.1 is not expected to have it
    assert lines(old, "llm_requests_waiting_by_reason")  # 0.20+
    # a 0.32.0 body that lost the family: a silent removal, reported, and the series absent (never 0)
    body = "\n".join(r for r in recorded("0.32.0").splitlines() if "admission_rejections" not in r) + "\n"
    text = exposition(body)
    assert lines(text, "llm_requests_rejected_total") == []
    assert present(text, "llm_requests_rejected_total")[0].endswith(" 0")


def test_flops_registered_but_not_counted_without_the_flag_are_absent_and_quiet() -> None:
    """vLLM 0.17+ registers estimated_flops/read_bytes at start-up; only --enable-mfu-metrics counts them.
    The recorded 0.32.0 server ran without the flag: its counters stay 0 after six completions."""
    body = recorded("0.32.0")
    assert 'vllm:estimated_flops_per_gpu_total{engine="0",model_name="tiny"} 0.0' in body
    text = exposition(body)
    for spec in (m.ESTIMATED_FLOPS, m.ESTIMATED_READ_BYTES):
        assert lines(text, spec.name) == []
        assert present(text, spec.name) == []
    assert not re.search(r"^llm_metric_present\{.*\} 0$", text, re.M)


def test_speculative_decoding_families_absent_without_the_flag_and_not_missing() -> None:
    text = exposition(recorded("0.32.0"))  # served without --speculative-config
    for spec in (m.SPEC_DECODE_DRAFT_TOKENS, m.SPEC_DECODE_ACCEPTED_TOKENS):
        assert lines(text, spec.name) == [] and present(text, spec.name) == []
    assert set(vllm.FLAGS.values()) == {"--enable-mfu-metrics", "--speculative-config", "--enable-lora"}


def test_context_limit_and_checkpoint_from_v1_models() -> None:
    models = served.parse_models((FIXTURES / "0.32.0-enable-mfu-metrics.models.json").read_bytes())
    assert [(s.model, s.max_context_tokens) for s in models] == [("tiny", 512)]  # --max-model-len 512
    assert models[0].root.endswith("/tiny-llama")  # the path the weights were loaded from
    text = exposition(recorded("0.32.0"), models=models)
    assert lines(text, "llm_engine_max_context_tokens") == [f'llm_engine_max_context_tokens{{{HEAD},model="tiny"}} 512']
    (info,) = lines(text, "llm_engine_model_info")
    assert info.startswith(f'llm_engine_model_info{{{HEAD},model="tiny",root="') and info.endswith("} 1")


def test_a_v1_models_answer_that_is_not_one_gives_nothing() -> None:
    for raw in (b"<html>404</html>", b"[]", b'{"data": {}}', b"\xff\xfe", b'{"object": "list"}'):
        assert served.parse_models(raw) == ()
    odd = b'{"data": [{"id": "a", "max_model_len": true}, {"id": 3}, {"id": "b", "max_model_len": -1, "root": 7}]}'
    assert served.parse_models(odd) == (served.ServedModel("a", "", None), served.ServedModel("b", "", None))
    many = b'{"data": [' + b",".join(b'{"id": "m%d"}' % i for i in range(500)) + b"]}"
    assert len(served.parse_models(many)) == served.MAX_MODELS


def test_flops_and_bytes_read_mapped_when_vllm_counts_them() -> None:
    """Recorded from vLLM 0.32.0 started with --enable-mfu-metrics, after six completions."""
    body = recorded("0.32.0-enable-mfu-metrics")
    text = exposition(body)
    assert lines(text, "llm_estimated_flops_per_gpu_total") == [
        f'llm_estimated_flops_per_gpu_total{{{HEAD},model="tiny",dp_rank="0"}} 40263680'
    ]
    assert lines(text, "llm_estimated_read_bytes_per_gpu_total") == [
        f'llm_estimated_read_bytes_per_gpu_total{{{HEAD},model="tiny",dp_rank="0"}} 66041344'
    ]
    for spec, source in ((m.ESTIMATED_FLOPS, "vllm:estimated_flops_per_gpu_total"),
                         (m.ESTIMATED_READ_BYTES, "vllm:estimated_read_bytes_per_gpu_total")):  # fmt: skip
        assert present(text, spec.name) == [
            f'llm_metric_present{{{HEAD},metric="{spec.name}",source="{source}",version="0.32.0"}} 1'
        ]
    assert not re.search(r"^llm_metric_present\{.*\} 0$", text, re.M)


def test_the_collector_reads_v1_models_with_the_version_and_caches_it() -> None:
    from exporter.config import Engines, Target
    from exporter.engines.collector import EngineCollector
    from tests.engines.engine_servers import engine_server

    answer = (FIXTURES / "0.32.0-enable-mfu-metrics.models.json").read_bytes()
    with engine_server("ok", recorded("0.32.0"), models=answer) as server:
        config = Engines(targets=[Target(url=server.url, labels={"namespace": "demo", "pod": "vllm-0"})])
        collector = EngineCollector(config)
        try:
            first, second = render(collector.collect()), render(collector.collect())
        finally:
            collector.close()
        assert server.models_requests == 1  # re-read with the version, not at every scrape
    for text in (first, second):
        assert lines(text, "llm_engine_max_context_tokens") == [
            f'llm_engine_max_context_tokens{{{HEAD},model="tiny"}} 512'
        ]
        assert len(lines(text, "llm_engine_model_info")) == 1


def test_an_engine_without_v1_models_loses_nothing_else() -> None:
    from exporter.config import Engines, Target
    from exporter.engines.collector import EngineCollector
    from tests.engines.engine_servers import engine_server

    with engine_server("ok", recorded("0.32.0")) as server:  # /v1/models answers the metrics text: not JSON
        config = Engines(targets=[Target(url=server.url, labels={"namespace": "demo", "pod": "vllm-0"})])
        collector = EngineCollector(config)
        try:
            text = render(collector.collect())
        finally:
            collector.close()
    assert "llm_engine_max_context_tokens" not in text and "llm_engine_model_info" not in text
    assert f"llm_engine_up{{{HEAD}}} 1" in text and lines(text, "llm_kv_cache_capacity_tokens")


def test_llama_cpp_context_is_the_per_slot_n_ctx_of_props() -> None:
    from exporter.engines import llamacpp

    # the shape llama-server b11434 answers (-c 1024 -np 2): only the fields read here
    answer = {"default_generation_settings": {"n_ctx": 512}, "total_slots": 2, "build_info": "b0-unknown"}
    assert llamacpp.props_context(answer) == (served.ServedModel("", "", 512),)
    settings = "default_generation_settings"
    odd: tuple[object, ...] = ({}, {settings: {"n_ctx": True}}, {settings: {"n_ctx": -1}}, {settings: []}, [])
    for other in odd:
        assert llamacpp.props_context(other) == ()
    target = from_url("http://10.0.0.1:8080", "demo", "llama-0", "llamacpp")
    text = render(build_families([Outcome(target, None, "connect", 0.0, "llamacpp")]))
    assert "llm_engine_max_context_tokens" not in text  # a target that is down says no limit


def test_tgi_length_histograms_from_0_5_0_never_from_its_earlier_summaries() -> None:
    from tests.engines.engine_bodies import body
    from tests.engines.test_engines import exposition as engine_exposition

    old, new = (engine_exposition("tgi", body("tgi", v), v) for v in ("0.4.3", "0.5.0"))
    assert "llm_request_prompt_tokens_count" not in old and "llm_request_generation_tokens_count" not in old
    assert 'metric="llm_request_prompt_tokens"' not in old  # a summary is no source: nothing to miss
    assert "llm_request_prompt_tokens_count{" in new and "llm_request_generation_tokens_count{" in new
