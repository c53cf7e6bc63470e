"""Per-adapter LoRA from vLLM's `lora_requests_info` (the real 0.32.0 server with --enable-lora, recorded):
bounded 0/1 series per adapter, the slots from max_lora, and nothing at all without the flag."""

from __future__ import annotations

from exporter.catalogue import engine as m
from exporter.engines import vllm
from tests.engines.engine_servers import recorded
from tests.engines.test_capacity import HEAD, exposition, lines, present

LORA = "0.32.0-enable-lora"
NOW = 'vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters=""} 1.7963671523883321e+09'


def test_the_recorded_adapters_are_idle_after_their_requests() -> None:
    body = recorded(LORA)
    assert NOW in body  # the newest series: nothing in flight when the body was recorded
    text = exposition(body)
    assert lines(text, "llm_lora_adapter_active") == [
        f'llm_lora_adapter_active{{{HEAD},model="",dp_rank="",adapter="ada"}} 0',
        f'llm_lora_adapter_active{{{HEAD},model="",dp_rank="",adapter="bob"}} 0',
    ]
    assert lines(text, "llm_lora_max_adapters") == [f'llm_lora_max_adapters{{{HEAD},model="",dp_rank=""}} 2']
    assert present(text, "llm_lora_max_adapters") == [
        f'llm_metric_present{{{HEAD},metric="llm_lora_max_adapters",source="vllm:lora_requests_info",'
        'version="0.32.0"} 1'
    ]


def test_the_newest_series_names_the_active_adapters() -> None:
    # the same body scraped while ada had a request in flight: its series set last
    body = (
        recorded(LORA)
        .replace("1.7963671523883321e+09", "1.7963671520e+09")
        .replace('"ada"} 1.7963671521844852e+09', '"ada"} 1.7963671529e+09')
    )
    assert lines(exposition(body), "llm_lora_adapter_active") == [
        f'llm_lora_adapter_active{{{HEAD},model="",dp_rank="",adapter="ada"}} 1',
        f'llm_lora_adapter_active{{{HEAD},model="",dp_rank="",adapter="bob"}} 0',
    ]


def test_adapters_beyond_the_bound_are_other() -> None:
    many = [f"a{i:02d}" for i in range(m.LORA_TOP_ADAPTERS + 4)]
    old = ((("max_lora", "4"), ("running_lora_adapters", ",".join(many)), ("waiting_lora_adapters", "")), 1.0)
    new = ((("max_lora", "4"), ("running_lora_adapters", "a19"), ("waiting_lora_adapters", "a19")), 2.0)
    rows = dict(vllm.lora_adapters_active([old, new]))
    assert len(rows) == m.LORA_TOP_ADAPTERS + 1
    assert rows[(("adapter", "a19"),)] == 1.0  # active first
    assert rows[(("adapter", "other"),)] == 0.0  # a15..a18: none active
    assert vllm.lora_max_adapters([old, new]) == [((), 4.0)]
    assert vllm.lora_adapters_active([]) == [] and vllm.lora_max_adapters([]) == []


def test_without_enable_lora_nothing_is_mapped_or_missing() -> None:
    text = exposition(recorded("0.32.0"))
    for name in ("llm_lora_adapter_active", "llm_lora_max_adapters"):
        assert lines(text, name) == [] and present(text, name) == []
