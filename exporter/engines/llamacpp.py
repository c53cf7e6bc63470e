"""llama.cpp `llama-server` → canonical `llm_*` metrics (`llamacpp:` prefix, needs `--metrics`: 501 without).

Version: `/props` → `build_info`, `"b" + LLAMA_BUILD_NUMBER + "-" + LLAMA_COMMIT` (`b11434-9f4a0c2` from a
release build): reported as `b11434` (source `endpoint`) and placed in the release table by that build
number (data/llamacpp_builds.json: the build numbers of the table's commits); below the first known build
the release is inferred from the names. Builds from a tarball or sdist say `b0-unknown`, which says
nothing, so the release is then inferred from the names. Release names are llama.cpp commits. Followed:
`kv_cache_usage_ratio` removed mid-2025 (PR #13660). Left absent on purpose:
- prompt tokens: `prompt_tokens_total` excludes prompt-cache hits, unlike every other engine's count;
- prefix-cache queries: none (hits: `prompt_tokens_cached_total`, 2026+);
- the throughput gauges reset on every scrape: never mapped.
The context limit per request (`llm_engine_max_context_tokens`) is `/props`' per-slot `n_ctx`, read with the
version. llama.cpp prints every family as soon as `--metrics` is on, so a missing source is alarming at once.
"""

from __future__ import annotations

import re

from exporter.catalogue import engine as m
from exporter.engines.engine import Engine
from exporter.engines.served import ServedModel

SOURCES = {
    m.REQUESTS_RUNNING: ("llamacpp:requests_processing",),
    m.REQUESTS_WAITING: ("llamacpp:requests_deferred",),
    m.KV_CACHE_USAGE: ("llamacpp:kv_cache_usage_ratio",),
    m.GENERATION_TOKENS: ("llamacpp:tokens_predicted_total",),
    m.PREFIX_CACHE_HITS: ("llamacpp:prompt_tokens_cached_total",),
}

_BUILD_INFO = re.compile(r"b([1-9][0-9]{0,8})(?:-[0-9A-Za-z]{1,40})?")


def build_info(text: str) -> tuple[str, int] | None:
    """("b11434", 11434) for a release build's `b11434-9f4a0c2`; None for b0 (no git at build time) or
    anything else."""
    match = _BUILD_INFO.fullmatch(text.strip())
    return (f"b{match.group(1)}", int(match.group(1))) if match else None


_VENDORED = re.compile(r"llama-cpp-python (\S+) \(llama\.cpp (\S+)\)")


def vendored(key: str) -> tuple[str, str | None]:
    """A release table entry's name and commit: its sources are those vendored in llama-cpp-python sdists, and
    llama.cpp has no semver, so a release is named by the vendored commit (or by the sdist where it is not
    recorded: "lcp-0.2.90")."""
    match = _VENDORED.match(key)
    if match is None:
        return key, None
    sdist, commit = match.groups()
    return (commit[:9], commit) if commit != "commit" else (f"lcp-{sdist}", None)


def props_context(answer: object) -> tuple[ServedModel, ...]:
    """The context one request may use, from `/props`: `default_generation_settings.n_ctx`, the context of one
    slot (`-c` divided by `-np`); () when the answer does not say. llama.cpp labels no model."""
    settings = answer.get("default_generation_settings") if isinstance(answer, dict) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
        return (ServedModel("", "", n_ctx),)
    return ()


SPEC = Engine(
    name="llamacpp",
    display_name="llama.cpp",
    prefixes=("llamacpp:",),
    sources=SOURCES,
    label_renames={},
    release_source="llamacpp",
    named_in_source=vendored,
    version_path="/props",
    version_field="build_info",
    metrics_disabled_status=501,  # started without --metrics
    lazy_series=False,
    unknown_versions=("b0-unknown",),
    version_build=build_info,
    served_in_version=props_context,
    notes={
        m.PROMPT_TOKENS: "prompt_tokens_total excludes prompt-cache hits",
        m.KV_CACHE_USAGE: "removed from llama.cpp in May 2025 (PR #13660)",
    },
    image_words=("llama cpp",),
    command=re.compile(r"\bllama-server\b"),
    context_args=("-c", "--ctx-size"),
    context_env=("LLAMA_ARG_CTX_SIZE",),
)
