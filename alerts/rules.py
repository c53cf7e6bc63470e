"""The alerts of the bundle, as data built from one `Thresholds` object.

Each alert is `query op threshold`: the Prometheus rule uses the whole expression, Grafana-managed rules
use the query and put the comparison in a math expression. Severities: `critical` pages now, `warning`
goes to the work queue, `info` helps troubleshooting.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from alerts.recording import scoped, slo_error_ratio
from alerts.thresholds import DEFAULT, Thresholds

SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True)
class Alert:
    name: str
    group: str
    query: str
    op: str  # ">", "==", ...; "" with threshold None for queries that are already the condition (absent())
    threshold: float | None
    for_: str
    severity: str
    summary: str
    description: str
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def expr(self) -> str:
        if self.threshold is None:
            return self.query
        return f"{self.query} {self.op} {number(self.threshold)}"

    @property
    def anchor(self) -> str:
        """The runbook anchor: GitHub's slug of a `## <AlertName>` heading."""
        return self.name.lower()


_QUERY_KEY = "job, instance, kind, namespace, name, location"
_SUCCESSOR = (
    "{{ if $labels.successor }}The release history names the successor: {{ $labels.renamed }} is now "
    "{{ $labels.successor }}{{ if $labels.fix }}; the query rewritten: {{ $labels.fix }}{{ end }}. {{ end }}"
)


def _with_successor(verdict: str) -> str:
    """The watchdog's verdict with the labels of llm_query_successor_info (renamed, successor, fix) where the
    release history knows the successor, so that the alert itself carries it; the verdict alone elsewhere."""
    return (
        f"({verdict} * on ({_QUERY_KEY}) group_left (renamed, successor, fix) llm_query_successor_info "
        f"or on ({_QUERY_KEY}) {verdict})"
    )


def number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _p99(histogram: str, window: str) -> str:
    return f"histogram_quantile(0.99, sum by (namespace, model, le) (rate({histogram}_bucket[{window}])))"


def _budget_burn(t: Thresholds, severity: str) -> str:
    """Any of the burn-rate pairs of `severity` holds, for a model with enough traffic to judge."""
    budget = 1 - t.ttft_slo_objective
    pairs = [
        f"({slo_error_ratio(b.long_window)} > {number(round(b.factor * budget, 6))}"
        f" and {slo_error_ratio(b.short_window)} > {number(round(b.factor * budget, 6))})"
        for b in t.ttft_burn_rates
        if b.severity == severity
    ]
    condition = pairs[0] if len(pairs) == 1 else "(" + " or ".join(pairs) + ")"
    return f"{condition} and on (namespace, model) llm:ttft_requests:rate1h > {number(t.ttft_slo_min_rate)}"


def _slo_text(t: Thresholds) -> str:
    return f"{number(round(t.ttft_slo_objective * 100, 4))} % of first tokens within {number(t.ttft_slo_seconds)}s"


def alerts(t: Thresholds = DEFAULT) -> list[Alert]:
    """Every alert of the bundle, in rule-file order, its llm_* selectors scoped by `t.selector`."""
    return [replace(a, query=scoped(a.query, t.selector)) for a in (*_alerts(t), *_audit_alerts(t), *_group_alerts(t))]


def _group_alerts(t: Thresholds) -> list[Alert]:
    """The groups that have a module of their own (alerts/groups/<group>.py)."""
    from alerts.groups import capacity

    return capacity.alerts(t)


def _alerts(t: Thresholds) -> list[Alert]:
    engine, gpu, placement, exporter = (
        "llm-inference.engine",
        "llm-inference.gpu",
        "llm-inference.placement",
        ("llm-inference.exporter"),
    )
    queries = "llm-inference.queries"
    return [
        Alert(
            "LLMTimeToFirstTokenBudgetBurn",
            engine,
            _budget_burn(t, "critical"),
            "",
            None,
            t.ttft_burn_for,
            "critical",
            "{{ $labels.namespace }}/{{ $labels.model }} burns its time-to-first-token error budget fast: "
            "{{ $value | humanizePercentage }} of first tokens are late.",
            f"Objective: {_slo_text(t)}. At this rate the 30-day error budget is gone in days, not weeks. "
            "Usually queueing: check requests waiting, queue time and the bottleneck row.",
        ),
        Alert(
            "LLMTimeToFirstTokenBudgetBurnSlow",
            engine,
            _budget_burn(t, "warning"),
            "",
            None,
            t.ttft_burn_for,
            "warning",
            "{{ $labels.namespace }}/{{ $labels.model }} keeps missing its time-to-first-token objective: "
            "{{ $value | humanizePercentage }} of first tokens are late.",
            f"Objective: {_slo_text(t)}. A slow, steady burn of the error budget: plan capacity (replicas, "
            "min replicas from the cold start) before it pages.",
        ),
        Alert(
            "LLMTimeToFirstTokenP99High",
            engine,
            _p99("llm_time_to_first_token_seconds", t.latency_window),
            ">",
            t.ttft_p99_seconds,
            t.ttft_for,
            # the error-budget alerts page; a high p99 alone is a work-queue signal
            "warning",
            "Users of {{ $labels.namespace }}/{{ $labels.model }} wait {{ $value | humanizeDuration }} for the "
            "first token (p99).",
            f"Time to first token p99 is above {number(t.ttft_p99_seconds)}s. Usually queueing: check requests "
            "waiting and queue time; add replicas or route away from hot pods.",
        ),
        Alert(
            "LLMInterTokenLatencyP99High",
            engine,
            _p99("llm_inter_token_latency_seconds", t.latency_window),
            ">",
            t.itl_p99_seconds,
            t.itl_for,
            "warning",
            "Streaming for {{ $labels.namespace }}/{{ $labels.model }} stalls {{ $value | humanizeDuration }} "
            "between tokens (p99).",
            f"Inter-token latency p99 is above {number(t.itl_p99_seconds)}s: decode is starved (too many "
            "concurrent sequences for the memory bandwidth, or preemptions).",
        ),
        Alert(
            "LLMRequestQueueBacklog",
            engine,
            "sum by (namespace, model) (llm_requests_waiting)",
            ">",
            t.queue_waiting,
            t.queue_for,
            "warning",
            "{{ $value }} requests are queued for {{ $labels.namespace }}/{{ $labels.model }}.",
            f"More than {number(t.queue_waiting)} requests wait to be scheduled: users are waiting whatever the "
            "GPU utilisation says. Scale out, or check the KV cache.",
        ),
        Alert(
            "LLMLoadImbalance",
            engine,
            f"llm:replica_queue_share > {number(t.imbalance_share)}"
            " and on (namespace, model) (min by (namespace, model) (llm:replica_requests_waiting) == 0)"
            " and on (namespace, model) (sum by (namespace, model) (llm:replica_requests_waiting)"
            f" >= {number(t.imbalance_min_waiting)})",
            "",
            None,
            t.imbalance_for,
            "warning",
            "{{ $labels.namespace }}/{{ $labels.pod }} holds {{ $value | humanizePercentage }} of the queue of "
            "{{ $labels.model }} while another replica has none.",
            "Routing, not capacity: requests pile up on one replica (round-robin over unequal prompts, or "
            "HTTP/2 and keep-alive connections pinned to one pod). Use a load-aware router or balance per request.",
        ),
        Alert(
            "LLMKVCacheNearlyFull",
            engine,
            "max by (namespace, pod, model) (llm_kv_cache_usage_ratio)",
            ">",
            t.kv_cache_ratio,
            t.kv_cache_for,
            "warning",
            "KV cache of {{ $labels.namespace }}/{{ $labels.pod }} is {{ $value | humanizePercentage }} full.",
            f"KV cache usage is above {t.kv_cache_ratio:.0%}: new requests queue and running ones get preempted. "
            "Add replicas or reduce max-model-len.",
        ),
        Alert(
            "LLMEngineDown",
            engine,
            "llm_engine_up",
            "==",
            0,
            t.engine_down_for,
            "critical",
            "Engine {{ $labels.namespace }}/{{ $labels.pod }} does not answer the exporter.",
            "The exporter cannot scrape this engine's metrics (see llm_engine_scrape_error for why). If the pod "
            "is running, the engine may be hung; its panels are blank meanwhile.",
        ),
        Alert(
            "LLMMetricMissing",
            engine,
            "llm_metric_present",
            "==",
            0,
            t.metric_missing_for,
            "warning",
            "{{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.engine }} {{ $labels.version }}) does not "
            "expose {{ $labels.source }}.",
            "The series behind canonical {{ $labels.metric }} is missing for this engine version: a rename or a "
            "disabled feature. Dashboards and autoscalers on it read nothing.",
        ),
        Alert(
            "LLMEngineSeriesDropped",
            engine,
            "llm_engine_series_dropped",
            ">",
            0,
            t.series_dropped_for,
            "warning",
            "{{ $labels.namespace }}/{{ $labels.pod }} loses {{ $value }} series per scrape ({{ $labels.reason }}).",
            "The exporter drops this engine's series past a cap (series_limit, label_too_long) or repeated "
            "(duplicate): panels and alerts on the dropped models or adapters read nothing.",
        ),
        Alert(
            "LLMEngineUnmappedMetrics",
            engine,
            "llm_engine_unmapped_metrics",
            ">",
            0,
            t.unmapped_for,
            "info",
            "{{ $labels.namespace }}/{{ $labels.pod }} exposes {{ $value }} engine metric families the mapping "
            "does not know.",
            "The early warning of a rename: a new engine release added or renamed series. Compare with "
            "`llm-exporter mappings` and upgrade the exporter before an old name disappears.",
        ),
        Alert(
            "LLMGPUMemoryNearlyFull",
            gpu,
            "llm_gpu_memory_used_bytes / llm_gpu_memory_total_bytes",
            ">",
            t.gpu_memory_ratio,
            t.gpu_memory_for,
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.instance }} is {{ $value | humanizePercentage }} full.",
            f"GPU memory use is above {t.gpu_memory_ratio:.0%}; new processes or CUDA graph captures on it will "
            "fail with out-of-memory. Check what else runs on the GPU.",
        ),
        Alert(
            "LLMGPULost",
            gpu,
            "llm_gpu_up",
            "==",
            0,
            t.gpu_lost_for,
            "critical",
            "GPU {{ $labels.gpu }} ({{ $labels.uuid }}) on {{ $labels.instance }} cannot be read.",
            "NVML cannot read this GPU: it fell off the bus or needs a reset. Pods on it fail; cordon the node "
            "and check the kernel log for Xid errors.",
        ),
        Alert(
            "LLMPodPendingWithFreeGPUs",
            placement,
            'llm_pending_pod_gpus_requested{reason="fragmented"}',
            ">",
            0,
            t.fragmented_for,
            "warning",
            "{{ $labels.namespace }}/{{ $labels.pod }} needs {{ $value }} {{ $labels.resource }} and stays "
            "Pending although the cluster has that many free.",
            "The free GPUs are spread over nodes so that no single node can hold the pod, although cpu, memory, "
            "pod affinity and topology spread would let it run on them. Bin-pack or drain small GPU pods, or "
            "split the replica.",
        ),
        Alert(
            "LLMReplicaStartupSlow",
            placement,
            "max by (namespace, workload) (llm_replica_starting_oldest_seconds)",
            ">",
            t.replica_startup_slow_seconds,
            t.replica_startup_slow_for,
            "warning",
            "A replica of {{ $labels.namespace }}/{{ $labels.workload }} has been starting for "
            "{{ $value | humanizeDuration }}.",
            f"An engine pod is not Ready {number(t.replica_startup_slow_seconds)}s after it was created: capacity "
            "the autoscaler asked for is not arriving. Pending (see the placement panels), a slow image or weights "
            "pull, or a crash loop before Ready.",
        ),
        Alert(
            "LLMAutoscalerMaxedOut",
            placement,
            "llm:autoscaler_at_max == 1 and on (namespace, workload)"
            f" (llm:workload_requests_waiting > {number(t.queue_waiting)})",
            "",
            None,
            t.autoscaler_maxed_for,
            "warning",
            "The autoscaler {{ $labels.autoscaler }} of {{ $labels.namespace }}/{{ $labels.workload }} is at its "
            "maximum replicas while requests queue.",
            "It cannot add capacity: raise the maximum (GPUs permitting), or shed or reroute load. Users wait in "
            "the queue meanwhile.",
        ),
        Alert(
            "LLMRouteTimeoutBelowRequestDuration",
            placement,
            _p99("llm_request_duration_seconds", t.latency_window)
            + f" > on (namespace) group_left () {number(t.route_timeout_fraction)}"
            " * min by (namespace) (llm_route_timeout_seconds)",
            "",
            None,
            t.route_timeout_for,
            "warning",
            "Requests to {{ $labels.namespace }}/{{ $labels.model }} take {{ $value | humanizeDuration }} (p99), "
            "close to the shortest route timeout in front of them.",
            f"The request-duration p99 is above {t.route_timeout_fraction:.0%} of the shortest Ingress or HTTPRoute "
            "timeout that reaches this namespace's engines: long generations are cut mid-stream and users see a "
            "broken answer. Raise the route timeout (llm_route_timeout_seconds says which) or cap max_tokens.",
        ),
        Alert(
            "LLMRouteBuffering",
            placement,
            "llm_route_buffering",
            "==",
            1,
            t.route_buffering_for,
            "warning",
            "{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.route }} buffers engine responses.",
            "The proxy collects the response before sending it on: a token stream reaches users in bursts, and "
            "time to first token as users feel it becomes the whole request. Turn buffering off for streaming "
            'routes (nginx.ingress.kubernetes.io/proxy-buffering: "off").',
        ),
        Alert(
            "LLMClusterViewStale",
            placement,
            "time() - llm_kubernetes_last_sync_timestamp_seconds",
            ">",
            t.cluster_view_stale_seconds,
            t.cluster_view_stale_for,
            "warning",
            "The cluster view of {{ $labels.instance }} is {{ $value | humanizeDuration }} old.",
            "The exporter has not been in sync with the API server for a while: free GPU counts and pending "
            "reasons describe the past. Check the API server's reachability and the exporter's RBAC and logs.",
        ),
        Alert(
            "LLMAutoscalerQueryEmpty",
            queries,
            _with_successor('llm_query_empty{kind=~"ScaledObject|ScaledJob"}'),
            "==",
            1,
            t.autoscaler_query_empty_for,
            "critical",
            "The query of {{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }} ({{ $labels.location }}) "
            "returns nothing.",
            "KEDA reads an empty result as 0 (ignoreNullValues defaults to true) and scales the workload down, at "
            "peak too. Usually a renamed metric: llm_query_empty_reason and the exporter's log say why. "
            + _SUCCESSOR
            + "Point the trigger at the stable llm_* name.",
        ),
        Alert(
            "LLMDashboardQueryEmpty",
            queries,
            _with_successor('llm_query_empty{kind="Dashboard"}'),
            "==",
            1,
            t.dashboard_query_empty_for,
            "warning",
            "Dashboard ConfigMap {{ $labels.namespace }}/{{ $labels.name }} has a query that returns nothing: "
            "{{ $labels.location }}.",
            "The panel is blank, and looks like an idle service. Usually a renamed metric: llm_query_empty_reason "
            "and the exporter's log say why. " + _SUCCESSOR + "`llm-exporter check` on the dashboard suggests the fix.",
        ),
        Alert(
            "LLMQueryWatchdogFailing",
            queries,
            'increase(llm_query_check_errors_total{reason=~"unreachable|unauthorized|credentials"}[15m])',
            ">",
            0,
            t.query_watchdog_failing_for,
            "warning",
            "The query watchdog on {{ $labels.instance }} cannot query Prometheus ({{ $labels.reason }}).",
            "The autoscaler and dashboard queries are not being checked: LLMAutoscalerQueryEmpty cannot fire. "
            "Check cluster.watchdog.prometheus (URL, credentials, CA) and the exporter's log.",
        ),
        Alert(
            "LLMExporterCollectorFailing",
            exporter,
            # a source absent by design (no NVML on a CPU node) is reported, but it is not a failure
            "(llm_exporter_collector_success unless on (job, instance, collector) "
            "(llm_exporter_collector_unavailable == 1))",
            "==",
            0,
            t.collector_failing_for,
            "warning",
            "Collector {{ $labels.collector }} of the exporter on {{ $labels.instance }} is failing.",
            "One part of the exporter's view is stale or missing while the rest works. The exporter logs name "
            "the error.",
        ),
        Alert(
            "LLMExporterDown",
            exporter,
            # one alert per target that fails, and one when no target is discovered at all; value 1 in both
            # cases, so that Grafana's "last value > 0" condition holds too
            f'1 - up{{job="{t.exporter_job}"}} > 0 or absent(up{{job="{t.exporter_job}"}})',
            "",
            None,
            t.exporter_down_for,
            "critical",
            "{{ if $labels.instance }}llm-exporter target {{ $labels.instance }} is down.{{ else }}"
            "No llm-exporter target is discovered.{{ end }}",
            f'Prometheus cannot scrape this exporter of job "{t.exporter_job}": the LLM alerts for its node or '
            "for the cluster view are blind. Check the exporter pod and the ServiceMonitor.",
        ),
        *_gpu_health(t),
    ]


# --- GPU health and waste (XIDs, row remapping, GPUs withdrawn, memory of no pod, idle assignments) -------

GPU_HEALTH = "llm-inference.gpu-health"
_PODS_ON_IT = (
    "{{ if $labels.pod }}Pod {{ $labels.namespace }}/{{ $labels.pod }} (container {{ $labels.container }}"
    "{{ if $labels.model }}, model {{ $labels.model }}{{ end }}) runs on it.{{ else }}No pod is assigned this "
    "GPU.{{ end }}"
)


def _naming_pods(expr: str, on: str, keep: str = "") -> str:
    """`expr` (one series per `on` key) once per pod container on that GPU, with its namespace, pod and
    container, and the model the pod serves where its engine reports one; alone for a GPU no pod holds. A MIG
    instance's pods name their parent GPU's index (gpu)."""
    per_pod = f"llm_gpu_pod_info * on ({on}) group_left ({keep}) ({expr})"
    model = "topk by (namespace, pod) (1, group by (namespace, pod, model) (llm_requests_running))"
    with_model = f"({per_pod}) * on (namespace, pod) group_left (model) {model}"
    return f"(({with_model}) or on ({on}, namespace, pod) ({per_pod}) or on ({on}) ({expr}))"


def _recent_xids(t: Thresholds, matcher: str) -> str:
    """The XIDs of `matcher` in the window, the most frequent per GPU; a series born in the window counts
    (increase() needs two samples of it)."""
    x, w = f"llm_gpu_xid_errors_total{{{matcher}}}", t.gpu_xid_window
    seen = f"sum without () ((increase({x}[{w}]) > 0) or ({x} unless {x} offset {w}))"
    return f"topk by (node, gpu) (1, {seen})"


def _gpu_health(t: Thresholds) -> list[Alert]:
    critical = "|".join(str(x) for x in t.gpu_xid_critical)
    xid_text = "NVIDIA's table (runbook) says what XID {{ $labels.xid }} needs. " + _PODS_ON_IT
    return [
        Alert(
            "LLMGPUXidError",
            GPU_HEALTH,
            _naming_pods(_recent_xids(t, f'xid=~"{critical}"'), "node, gpu", "xid"),
            ">",
            0,
            "0m",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $labels.xid }} ({{ $value }} in "
            f"{t.gpu_xid_window}).",
            "A fatal XID: the GPU needs a reset, the node a drain, or the GPU a replacement. " + xid_text,
        ),
        Alert(
            "LLMGPUXidWarning",
            GPU_HEALTH,
            _naming_pods(_recent_xids(t, f'xid!~"{critical}"'), "node, gpu", "xid"),
            ">",
            0,
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $labels.xid }} ({{ $value }} in "
            f"{t.gpu_xid_window}).",
            "Mostly an application fault (a bad kernel, an illegal address) or a recovered error; repeated, "
            "it precedes a fatal one. " + xid_text,
        ),
        Alert(
            "LLMGPURowRemapFailed",
            GPU_HEALTH,
            _naming_pods("llm_gpu_row_remap_failed", "node, gpu"),
            ">",
            0,
            t.gpu_row_remap_failed_for,
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} failed to remap a memory row.",
            "A bank has no spare rows left: the next uncorrectable error cannot be repaired. Drain the node and "
            "have the GPU replaced. " + _PODS_ON_IT,
        ),
        Alert(
            "LLMGPUUnhealthyInKubernetes",
            GPU_HEALTH,
            "llm_node_gpus_unhealthy",
            ">",
            0,
            t.gpu_unhealthy_for,
            "warning",
            "Node {{ $labels.node }} has {{ $value }} {{ $labels.resource }} it does not offer to pods.",
            "The device plugin withdrew them (capacity above allocatable): it found them unhealthy (an XID, a "
            "failed health check). The node runs with fewer GPUs until they are reset or replaced; its "
            "exporter's llm_gpu_xid_errors_total and llm_gpu_up say which.",
        ),
        Alert(
            "LLMGPUMemoryHeldOutsidePods",
            GPU_HEALTH,
            _naming_pods("llm_gpu_unattributed_memory_bytes", "node, gpu, uuid"),
            ">",
            t.gpu_unattributed_memory_bytes,
            t.gpu_unattributed_memory_for,
            "warning",
            "{{ $value | humanize1024 }}B on GPU {{ $labels.gpu }} ({{ $labels.uuid }}) on {{ $labels.node }} "
            "belong to no pod assigned this GPU.",
            "A host job, a process left over from a deleted pod, a debug container or a pod that sees GPUs it "
            "did not request holds this memory: the assigned pod runs out of memory below its budget. "
            "`nvidia-smi --query-compute-apps=pid,used_memory --format=csv` on the node lists the processes. "
            + _PODS_ON_IT,
        ),
        Alert(
            "LLMGPUAllocatedIdle",
            GPU_HEALTH,
            "llm_gpu_allocated_idle",
            "==",
            1,
            t.gpu_allocated_idle_for,
            "info",
            "{{ $labels.namespace }}/{{ $labels.pod }} holds GPU {{ $labels.gpu }} on {{ $labels.node }} and "
            "does not use it.",
            "The container assigned this GPU has had no process on it, or a near-zero utilisation, for the "
            "exporter's gpu.allocated_idle_seconds: the GPU is paid for and idle. Scale the workload down or "
            "give the GPU back.",
        ),
    ]


def _audit_alerts(t: Thresholds) -> list[Alert]:
    """Deployment checks (`exporter.audit`): one alert per failing check of an engine workload; the advisory
    checks (severity info on the series) alert at info."""
    audit = "llm-inference.audit"
    summary = (
        "{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.workload }} fails deployment check {{ $labels.check }}."
    )
    description = (
        "The engine workload has a setting the write-ups name as a cause of slow or broken LLM serving (see the "
        "runbook section of the check). `llm-exporter audit -n {{ $labels.namespace }}` prints the reason, the "
        'fix and the threshold it used; a workload that means it opts out with llm-exporter.io/audit-skip: "'
        '{{ $labels.check }}".'
    )
    return [
        Alert(
            "LLMWorkloadCheckFailing",
            audit,
            'llm_workload_check_failing{severity="warning"}',
            "==",
            1,
            t.workload_check_failing_for,
            "warning",
            summary,
            description,
        ),
        Alert(
            "LLMWorkloadCheckAdvisory",
            audit,
            'llm_workload_check_failing{severity="info"}',
            "==",
            1,
            t.workload_check_failing_for,
            "info",
            summary,
            description,
        ),
    ]


def groups(t: Thresholds = DEFAULT) -> dict[str, list[Alert]]:
    """Alerts by rule group, in order of first appearance."""
    out: dict[str, list[Alert]] = {}
    for alert in alerts(t):
        out.setdefault(alert.group, []).append(alert)
    return out


def runbook_url(alert: Alert, t: Thresholds = DEFAULT) -> str:
    return f"{t.runbook_url}#{alert.anchor}"
