"""The overview's closing rows: telemetry health (can these panels be trusted?), the deployment checks of the
cluster role's audit, and capacity in tokens and cost. Rows of `overview.dashboard.py`, in its order.
"""

from __future__ import annotations

from dashboards.lib import (
    ENGINE,
    SOURCE,
    Query,
    Row,
    rate,
    selector,
    stat,
    table,
    timeseries,
)

health = Row(
    "Telemetry health: can these panels be trusted?",
    [
        timeseries(
            "Engines up",
            [
                Query(f"sum by (namespace) ({selector('llm_engine_up', SOURCE)})", "up {{namespace}}"),
                Query(f"count by (namespace) ({selector('llm_engine_up', SOURCE)})", "targets {{namespace}}"),
            ],
            unit="short",
            description="Engine targets the exporter scraped successfully, against all targets. A gap means an "
            "engine's /metrics is unreachable: its panels above go blank for that pod. See llm_engine_scrape_error "
            "for the reason.",
        ),
        table(
            "Engine versions",
            [Query(f"count by (engine, version, version_source) ({selector('llm_engine_info', SOURCE)})")],
            unit="short",
            width=8,
            description="Engine releases running, with how the version was learnt. Mixed versions during a rollout "
            "are expected; a version_source of 'inferred' means the engine gave no version and it was read from "
            "its metric names: the mapping may be guessing, check missing series.",
        ),
        timeseries(
            "Missing canonical series",
            [
                Query(
                    f"sum by (namespace, pod, version) (1 - {selector('llm_metric_present', SOURCE)})",
                    "{{namespace}}/{{pod}} {{version}}",
                )
            ],
            unit="short",
            description="Canonical series the running engine version should expose but does not: the silent-rename "
            "alarm. Above 0, some panels here (and autoscalers on those names) read nothing; see the runbook "
            "entry LLMMetricMissing.",
        ),
        timeseries(
            "Unmapped engine metrics",
            [
                Query(
                    f"sum by (namespace, pod) ({selector('llm_engine_unmapped_metrics', SOURCE)})",
                    "{{namespace}}/{{pod}}",
                )
            ],
            unit="short",
            description="Engine metric families no known release exposes: early warning of a new rename. A jump "
            "after an engine upgrade means the exporter needs a mapping update before a series goes missing.",
        ),
        timeseries(
            "Exporter collectors succeeding",
            [Query("min by (instance, collector) (llm_exporter_collector_success)", "{{instance}} {{collector}}")],
            unit="short",
            max_value=1,
            description="1 when each exporter collector's last run succeeded. A 0 means that part of the view is "
            "stale or missing: read the exporter logs for the collector named here.",
        ),
    ],
)


# Deployment checks (the cluster role's audit): the failing checks of each engine workload, with the fix
_CHECK_LABELS = "namespace, kind, workload, check, severity"


def _checks_row() -> Row:
    from exporter.audit.checks import CHECKS

    failing = table(
        "Failing deployment checks",
        [Query(f"max by ({_CHECK_LABELS}) ({selector('llm_workload_check_failing', SOURCE)}) == 1")],
        unit="short",
        width=18,
        description="Each engine workload's failing checks against the write-ups' checklist (the check column "
        "shows its fix). `llm-exporter audit -n NAMESPACE` prints the reason and the threshold it used (measured "
        "start-up or the default); the runbook has a section per check. Empty: nothing fails.",
    )
    # the check id shown with its fix: the series carry the id only
    mapping = {c.id: {"text": f"{c.id}: {c.fix}", "index": i} for i, c in enumerate(CHECKS)}
    failing.panel.overrides = [
        {
            "matcher": {"id": "byName", "options": "check"},
            "properties": [{"id": "mappings", "value": [{"type": "value", "options": mapping}]}],
        }
    ]
    return Row(
        "Deployment checks: will it hold under load?",
        [
            failing,
            stat(
                "Failing checks",
                [Query(f"sum({selector('llm_workload_check_failing', SOURCE)})", "failing checks")],
                unit="short",
                width=6,
                description="Checks failing across the engine workloads (0: every applicable check passes). A "
                "setting, not an incident: it costs at the next burst, node upgrade or long generation.",
            ),
        ],
    )


deployment_checks = _checks_row()


# Capacity in tokens (the llm-inference.capacity and llm-inference.cost rules): how much one GPU takes, which
# resource runs out first, and what a token costs. Appended after the other rows: their panel ids stay put.
_MODEL = 'namespace=~"$namespace", model=~"$model"'  # recorded per model: no engine label
_RANK = "namespace, pod, dp_rank"

capacity = Row(
    "Capacity: how many tokens can a GPU take, and at what cost?",
    [
        timeseries(
            "Tokens per second per GPU",
            [
                Query(selector("llm:prompt_tokens_per_gpu:rate5m", _MODEL), "prompt {{namespace}}/{{model}}"),
                Query(selector("llm:generation_tokens_per_gpu:rate5m", _MODEL), "completion {{namespace}}/{{model}}"),
            ],
            unit="short",
            description="Tokens each GPU serving the model processes per second: prompt tokens (prefill, the "
            "compute-heavy part) and completion tokens (decode, bounded by memory bandwidth) apart. Capacity is "
            "planned in tokens per second, not requests: compare this with the rate at which time to first token "
            "degrades to find what one GPU can take. A GPU shared by two pods is counted once.",
        ),
        timeseries(
            "MFU and MBU per model",
            [
                Query(selector("llm:model_flops_utilization", _MODEL), "MFU {{namespace}}/{{model}}"),
                Query(selector("llm:model_bandwidth_utilization", _MODEL), "MBU {{namespace}}/{{model}}"),
            ],
            unit="percentunit",
            max_value=1,
            description="Model FLOPs utilisation (the engine's estimated FLOPs over the GPU's datasheet peak) and "
            "model bandwidth utilisation (its estimated bytes read over the GPU's peak memory bandwidth). The "
            "higher one says what binds: MFU high, the GPU computes as fast as it can (prefill-bound); MBU high, "
            "it reads memory as fast as it can (decode-bound). Needs vLLM's --enable-mfu-metrics.",
        ),
        timeseries(
            "KV cache in tokens",
            [
                Query(
                    f"max by ({_RANK}) ({selector('llm_kv_cache_capacity_tokens', SOURCE)})",
                    "capacity {{namespace}}/{{pod}}",
                ),
                Query(
                    # SGLang counts the tokens held; vLLM says the share of blocks used, of its capacity in tokens
                    f"max by ({_RANK}) ({selector('llm_kv_cache_used_tokens', SOURCE)}) or max by ({_RANK}) "
                    f"({selector('llm_kv_cache_capacity_tokens', SOURCE)}) * on ({_RANK}) max by ({_RANK}) "
                    f"({selector('llm_kv_cache_usage_ratio', SOURCE)})",
                    "used {{namespace}}/{{pod}}",
                ),
                Query(selector("llm:kv_cache_headroom_tokens", SOURCE), "headroom {{namespace}}/{{pod}}"),
            ],
            unit="short",
            description="The KV cache holds the attention state of every request in flight, in tokens. Capacity "
            "is what the engine sized at start-up; used is what requests hold now (SGLang counts it; for vLLM it is "
            "the capacity times its usage ratio, block by block, as is the headroom). Headroom near 0 means new "
            "requests wait or running ones are preempted.",
        ),
        timeseries(
            "Context reserved vs used",
            [
                Query(
                    f"max by (namespace, model) ({selector('llm_engine_max_context_tokens', ENGINE)})",
                    "limit {{namespace}}/{{model}}",
                ),
                Query(selector("llm:request_context_tokens:p99_1h", _MODEL), "p99 used {{namespace}}/{{model}}"),
            ],
            unit="short",
            description="The context limit the engine accepts (vLLM --max-model-len) against the p99 prompt plus "
            "the p99 generation length of the last hour. A limit many times what requests use reserves KV cache "
            "and batch room for contexts nobody sends (alert LLMContextOversized).",
        ),
        timeseries(
            "Rejected and preempted requests",
            [
                Query(
                    f"sum by (namespace, model) ({rate('llm_requests_rejected_total', ENGINE)})",
                    "rejected {{namespace}}/{{model}}",
                ),
                Query(
                    f"sum by (namespace, model) ({rate('llm_preemptions_total', ENGINE)})",
                    "preempted {{namespace}}/{{model}}",
                ),
            ],
            unit="reqps",
            description="Requests per second refused by the engine's admission control before they queue "
            "(clients get errors), and running requests evicted to free KV cache (the GPU redoes their work). "
            "Either above 0 for long means the replica is past its capacity: add replicas or lower max-num-seqs.",
        ),
        timeseries(
            "Cost per million tokens and idle GPU-hours",
            [
                Query(
                    selector("llm:model_cost_per_million_tokens:rate1h", _MODEL),
                    "{{currency}} per 1M tokens {{namespace}}/{{model}}",
                ),
                Query(
                    f"avg_over_time({selector('llm:model_gpus_idle', _MODEL)}[1h])",
                    "idle GPU-hours (last hour) {{namespace}}/{{model}}",
                ),
            ],
            unit="short",
            description="What a million tokens (prompt and completion) of the model cost over the last hour, "
            "from the price per GPU-hour set in the cluster role (cost.gpu_hour_prices; no price set: no line), "
            "and the GPU-hours of the last hour its pods held without serving a token: paid for, unused.",
        ),
    ],
)
