"""The engine seam: what the collector, the mapping and the alarm need to know about one inference engine.

Each engine module (`vllm.py`, `sglang.py`, …) builds one `Engine`. Everything else stays engine-neutral:
it asks the `Engine` for its sources, labels, version endpoint and release table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from exporter.catalogue.engine import CAPACITY
from exporter.catalogue.spec import MetricSpec
from exporter.engines.releases import Releases, load
from exporter.engines.served import ServedModel

Labels = tuple[tuple[str, str], ...]
# a source family's samples (labels, value) → the canonical metric's samples, for a quantity the engine states
# in another form (vLLM's KV capacity in cache_config_info's labels); [] when the body does not state it
Derive = Callable[[Sequence[tuple[Labels, float]]], list[tuple[Labels, float]]]


@dataclass(frozen=True, eq=False)  # identity: one object per engine
class Engine:
    name: str  # the `engine` label value and config key
    display_name: str  # how docs and diagnoses write it ("vLLM", "llama.cpp")
    prefixes: tuple[str, ...]  # family prefixes that identify the engine in a body
    sources: Mapping[MetricSpec, tuple[str, ...]]  # canonical metric → same-meaning families, newest first
    label_renames: Mapping[str, str]  # source label → ours (`model`, `dp_rank`)
    version_path: str | None  # where the engine says its version; None: inferred from the names present
    version_field: str = "version"  # the JSON field of that answer
    metrics_path: str = "/metrics"  # where it serves the Prometheus text format, below the target's base URL
    # its `/metrics` answers something else (trtllm-serve: JSON iteration stats), so that an unidentified
    # target whose `/metrics` is JSON is tried at this engine's `metrics_path`, and is this engine if it answers
    json_at_metrics: bool = False
    # the HTTP status it answers on its metrics path when its metrics are switched off (llama.cpp without
    # `--metrics`: 501), reported as reason `metrics_disabled` instead of a bare status
    metrics_disabled_status: int | None = None
    # engines whose client creates most series on first use: a missing source is not alarming until the
    # engine has served a request (one of these counters is non-zero)
    lazy_series: bool = True
    activity: tuple[str, ...] = ()
    unknown_versions: tuple[str, ...] = ()  # version answers that say nothing (llama.cpp sdist builds: b0-unknown)
    # a version answer that is a build number (llama.cpp's `b11434-9f4a0c2`): (label, build), placed in the
    # release table by Releases.by_build; None for an answer it does not read
    version_build: Callable[[str], tuple[str, int] | None] | None = None
    # the flavour of release a body shows (vLLM's Rust frontend), whose own expected families then apply
    # (Releases.flavoured); None for the default flavour
    flavour: Callable[[str], str | None] | None = None
    notes: Mapping[MetricSpec, str] | None = None  # why a canonical metric is absent (documented per engine)
    # canonical metric → the engine flag without which its source does not exist (or counts nothing): mapped
    # when the body has it, never reported missing (`llm_metric_present` only says 1 once it is there)
    flags: Mapping[MetricSpec, str] = field(default_factory=dict)
    # counters registered at start-up but counted only with their flag (vLLM's estimated FLOPs): while every
    # sample is 0 they are absent, since an unused flag would otherwise read as zero work done
    counted_with_flag: frozenset[MetricSpec] = frozenset()
    derived: Mapping[MetricSpec, Derive] = field(default_factory=dict)
    # label → what writes it, for a label it writes only with a flag or a feature (from the release source's
    # `_meta.labels`): `check` says a matcher on it needs that flag, not that anything was renamed
    label_flags: Mapping[str, str] = field(default_factory=dict)
    # its entry in `data/engine_metrics_by_version.json`, from which `engine_releases` derives its release table;
    # None where the table comes from elsewhere (vLLM's own source table, trtllm's written one)
    release_source: str | None = None
    # its release table where it is written rather than derived (trtllm's); None: the derived one (`releases.load`)
    written_releases: Callable[[], Releases] | None = None
    # the release one of those entries is, where the key is no version (llama.cpp's "llama-cpp-python 0.3.5
    # (llama.cpp 26a8406ba)"): (our name for it, the commit it vendors, or None); such releases keep the
    # source's order and are placed by the commit's build number. None: the key is the version
    named_in_source: Callable[[str], tuple[str, str | None]] | None = None
    # probe for the context limit and the checkpoint served, re-read with the version: an OpenAI `/v1/models`
    # (`max_model_len`, `root` per model id), or None
    models_path: str | None = None
    # the same from the version answer itself (llama.cpp's /props: the context per slot), or None
    served_in_version: Callable[[object], tuple[ServedModel, ...]] | None = None
    # how the audit knows the engine in a pod spec (`exporter.audit.recognise`); a port named `name` says it too.
    # The words of an image's repository path that name it (`vllm`); a name of several words
    # ("text generation inference") is matched on the path's joined words, before any single word
    image_words: tuple[str, ...] = ()
    command: re.Pattern[str] | None = None  # a match in its container's command and args (`vllm serve`)
    # the arguments, then the environment variables, that cap the context it reserves KV cache for
    # (context-oversized)
    context_args: tuple[str, ...] = ()
    context_env: tuple[str, ...] = ()
    # what it serves, read from its pod spec for llm_model_info (`exporter.replicas.model_info`): a label of
    # that metric → the spellings of its argument, then of its environment variable (the first set wins)
    model_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    model_env: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # the command after which the model is the first positional argument (`vllm serve <model>`), or None
    model_positional: re.Pattern[str] | None = None
    # its documented served model name when none is given: the model argument itself (vLLM, SGLang)
    served_name_is_model: bool = False

    def releases(self) -> Releases:
        """The per-release table (cached by its loader)."""
        return self.written_releases() if self.written_releases is not None else load(self.name)

    def version_in(self, answer: object) -> str | None:
        """The version its version endpoint's JSON `answer` states (`version_field`), or None."""
        value = answer.get(self.version_field) if isinstance(answer, dict) else None
        return value if isinstance(value, str) and value else None

    @property
    def family_prefix(self) -> str:
        return self.prefixes[0]

    def source_families(self) -> frozenset[str]:
        """The families whose presence places a release when its version is unknown. Not the capacity
        metrics' sources: late and partly behind flags, they would tip a sparse body (one family found)
        toward the releases that lack them."""
        return frozenset(s for spec, sources in self.sources.items() if spec not in CAPACITY for s in sources)
