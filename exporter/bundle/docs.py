"""Generate `docs/metrics.md` from the catalogue (`python -m exporter.bundle.docs --write`; a test fails on drift)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from exporter import __version__
from exporter.catalogue import ALL, MetricSpec, renames
from exporter.derived import generated_files_main
from exporter.engines.table import behind_flags, render_table

OUT = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
SECTIONS = {
    "engine": "Engine (node role)",
    "gateway": "Gateway (node role)",
    "gpu": "GPU (node role)",
    "cluster": "Cluster (cluster role)",
    "exporter": "Exporter",
}

# what the bundle's recording rules make of a section's metrics (the rules' modules say how)
NOTES = {
    "gateway": (
        "The recording rules of `llm-inference.tenants` (`alerts/recordings/tenants.py`) join these to the GPUs",
        "each model's engine pods hold, by model name ([gateways.md](gateways.md#cost-per-tenant) says what must",
        "match): `llm:tenant_token_share:ratio_rate1h` (a tenant's share of the model's gateway tokens, prompt and",
        "generation apart), `llm:model_phase_share:ratio_rate1h` (the engine's prefill and decode time),",
        "`llm:tenant_gpus_allocated` (GPU-seconds per second), `llm:tenant_cost_per_second` and",
        "`llm:tenant_cost_per_million_tokens:rate1h` (from `llm_gpu_price_per_second`), and",
        "`llm:model_gateway_token_coverage:ratio_rate1h` (the gateway's tokens of a model over the engine's).",
        "",
    ),
}


def served(specs: Iterable[MetricSpec], renamed: tuple[renames.Rename, ...], version: str) -> list[MetricSpec]:
    """`specs`, each followed by its old name while `version` still serves it (marked deprecated)."""
    old = {r.new.name: r.deprecated_spec() for r in renames.active(renamed, version)}
    return [s for spec in specs for s in (spec, old.get(spec.name)) if s is not None]


def render() -> str:
    lines = [
        "# Metric reference",
        "",
        "Generated from `exporter/catalogue/` by `python -m exporter.bundle.docs --write`; do not edit by hand.",
        "Stable names are a contract: a rename keeps the old name for one minor release, marked DEPRECATED.",
        "",
    ]
    for subsystem, title in SECTIONS.items():
        lines += [
            f"## {title}",
            "",
            "| metric | type | unit | labels | stability | help |",
            "|---|---|---|---|---|---|",
        ]
        for spec in (s for s in served(ALL, renames.RENAMES, __version__) if s.subsystem == subsystem):
            labels = ", ".join(f"`{label}`" for label in spec.labels) or "—"
            help_text = spec.help.replace("|", "\\|") + (f" DEPRECATED: {spec.deprecated}" if spec.deprecated else "")
            lines.append(
                f"| `{spec.name}` | {spec.type.value} | {spec.unit or '—'} | {labels} | {spec.stability.value} "
                f"| {help_text} |"
            )
        lines += ["", *NOTES.get(subsystem, ())]
    lines += [
        "## vLLM sources per release",
        "",
        "Which vLLM family feeds each canonical metric, release by release (`llm-exporter mappings`). A release",
        "newer than the table uses the newest mapping. `—`: the release exposes no source; the metric is absent",
        "and no `llm_metric_present` series is emitted for it.",
        "",
        "Behind a flag (mapped when present, never reported missing, so `llm_metric_present` stays quiet on a",
        "server started without it):",
        "",
        *behind_flags("vllm"),
        "",
        "`llm_kv_cache_capacity_tokens` is read from `vllm:cache_config_info`'s labels: `kv_cache_size_tokens`",
        "(the group-aware size vLLM logs at start-up), else `num_gpu_blocks` x `block_size` (never for a hybrid",
        "model, whose `mamba_block_size` is set); it carries no `model` (the family has none). vLLM has no exact",
        "count of KV tokens in use (`kv_cache_usage_perc` is a block ratio), so `llm_kv_cache_used_tokens` is",
        "absent for vLLM. `llm_engine_max_context_tokens` and `llm_engine_model_info` come from `/v1/models`,",
        "read with `/version` and cached as long.",
        "",
        render_table(markdown=True, engine="vllm"),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return generated_files_main(
        argv, description=__doc__.splitlines()[0], render=lambda: {OUT: render()}, module="exporter.bundle.docs"
    )


if __name__ == "__main__":
    raise SystemExit(main())
