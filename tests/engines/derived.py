"""Older vLLM name sets, derived from a recorded 0.32.0 body by undoing vLLM's renames.

0.8.2 and older: no `engine` label; `gpu_cache_usage_perc`, `time_per_output_token_seconds`,
`gpu_prefix_cache_*` (0.8.x). 0.10.2: both old and new names for the KV cache and ITL.
"""

from __future__ import annotations

import json
import re

from exporter.engines.engine_releases import VLLM_SOURCE as SOURCE
from tests.engines.engine_servers import recorded

OLD_NAMES = {
    "vllm:kv_cache_usage_perc": "vllm:gpu_cache_usage_perc",
    "vllm:inter_token_latency_seconds": "vllm:time_per_output_token_seconds",
    "vllm:prefix_cache_queries": "vllm:gpu_prefix_cache_queries",
    "vllm:prefix_cache_hits": "vllm:gpu_prefix_cache_hits",
}


def body_0_8_2() -> str:
    body = recorded("0.32.0")
    for new, old in OLD_NAMES.items():
        body = re.sub(re.escape(new) + r"(?=[_{ ])", old, body)
    return re.sub(r'engine="\d+",?', "", body).replace(",}", "}")


def body_0_10_2() -> str:
    """Both names side by side, as 0.10.2 emits them (the old ones deprecated)."""
    body = recorded("0.32.0")
    extra = []
    for line in body.splitlines():
        for new in ("vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds"):
            if line.startswith(new) or line.startswith(f"# TYPE {new}") or line.startswith(f"# HELP {new}"):
                extra.append(line.replace(new, OLD_NAMES[new]))
    return body + "\n".join(extra) + "\n"


def body_rust_frontend(version: str = "0.34.0") -> str:
    """A recorded 0.32.0 Python-frontend body as the Rust frontend of `version` serves it: only the families
    its rust/src registers (data/vllm_metrics_by_version.json, versions_rust_frontend), in OpenMetrics 1.0 as
    prometheus-client encodes it (`# TYPE`/`# HELP` carry the name as registered, a counter's samples add
    `_total`, the body ends in `# EOF`)."""
    source = json.loads(SOURCE.read_text())
    registered = {r["name"]: r["registered_as"] for r in source["versions_rust_frontend"][version]}
    kept: list[str] = []
    for line in recorded("0.32.0").splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            family = line.split(" ", 3)[2]
            name = family + "_total" if family + "_total" in registered else family
            if name in registered:
                kept.append(line.replace(family, registered[name], 1))
            continue
        sample = re.split(r"[{ ]", line, maxsplit=1)[0]
        base = re.sub(r"_(bucket|sum|count|created)$", "", sample)
        if (sample in registered or base in registered) and not sample.endswith("_created"):
            kept.append(line)
    return "\n".join(kept) + "\n# EOF\n"
