"""TGI → canonical `llm_*` metrics (`tgi_` prefix; version at `/info`).

TGI's Rust exporter writes counters **without** `_total` (`tgi_request_success`) and, before 0.5.0, request
durations as summaries, which are not histograms and so do not map. Left absent on purpose:
- time to first token: TGI has none;
- inter-token latency: `tgi_request_mean_time_per_token_duration` is a per-request mean that includes prefill;
- token counters: TGI has only per-request length histograms (`tgi_request_input_length`), not the same quantity
  (they feed `llm_request_prompt_tokens` and `llm_request_generation_tokens` instead, from 0.5.0 on);
- KV-cache usage: only derivable as a ratio of two batch gauges, not exported by TGI.
Every series is registered on first use: a fresh TGI has almost none.
"""

from __future__ import annotations

import re

from exporter.catalogue import engine as m
from exporter.engines.engine import Engine

SOURCES = {
    m.REQUESTS_RUNNING: ("tgi_batch_current_size",),
    m.REQUESTS_WAITING: ("tgi_queue_size",),
    m.REQUEST_DURATION: ("tgi_request_duration",),
    m.REQUEST_QUEUE_TIME: ("tgi_request_queue_duration",),
    m.REQUESTS_FINISHED: ("tgi_request_success",),
    m.REQUEST_PROMPT_TOKENS: ("tgi_request_input_length",),
    m.REQUEST_GENERATION_TOKENS: ("tgi_request_generated_tokens",),
}

SPEC = Engine(
    name="tgi",
    display_name="TGI",
    prefixes=("tgi_",),
    sources=SOURCES,
    label_renames={},
    release_source="tgi",
    version_path="/info",
    activity=("tgi_request_count", "tgi_request_success"),
    notes={
        m.TIME_TO_FIRST_TOKEN: "TGI exposes no time to first token",
        m.INTER_TOKEN_LATENCY: "mean_time_per_token_duration is a per-request mean including prefill",
        m.PROMPT_TOKENS: "only a per-request input length histogram",
        m.GENERATION_TOKENS: "only a per-request generated tokens histogram",
    },
    image_words=("text generation inference", "tgi"),
    command=re.compile(r"\btext-generation-launcher\b"),
    # the total tokens, or the input cap the product chose (either one says the context was sized)
    context_args=("--max-total-tokens", "--max-input-tokens", "--max-input-length"),
    context_env=("MAX_TOTAL_TOKENS", "MAX_INPUT_TOKENS", "MAX_INPUT_LENGTH"),
    # launcher/src/main.rs Args (clap: each argument also read from its environment variable); no served model
    # name argument is read: left empty
    model_args={
        "model": ("--model-id",),
        "revision": ("--revision",),
        "quantization": ("--quantize",),
        "dtype": ("--dtype",),
        "max_model_len": ("--max-total-tokens",),
    },
    model_env={
        "model": ("MODEL_ID",),
        "revision": ("REVISION",),
        "quantization": ("QUANTIZE",),
        "dtype": ("DTYPE",),
        "max_model_len": ("MAX_TOTAL_TOKENS",),
    },
)
