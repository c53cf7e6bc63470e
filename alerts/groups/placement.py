"""Alert group llm-inference.placement: pods that cannot be placed, replicas slow to start, autoscalers at
their maximum, routes that cut or buffer streams, a stale cluster view."""

from __future__ import annotations

from alerts.expr import number, p99
from alerts.model import Alert
from alerts.thresholds import Thresholds

GROUP = "llm-inference.placement"


def alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            name="LLMPodPendingWithFreeGPUs",
            group=GROUP,
            query='llm_pending_pod_gpus_requested{reason="fragmented"}',
            op=">",
            threshold=0,
            for_=t.fragmented_for,
            severity="warning",
            summary=(
                "{{ $labels.namespace }}/{{ $labels.pod }} needs {{ $value }} {{ $labels.resource }} and stays "
                "Pending although the cluster has that many free."
            ),
            description=(
                "Moving GPU pods would let it run: the free GPUs of the nodes that its pod affinity, topology spread "
                "and the pods without GPUs leave open add up to its request, but no single node has the GPUs, and "
                "the cpu and memory, for it now; the GPU pods there hold the rest. Bin-pack or drain small GPU pods, "
                "or split the replica."
            ),
        ),
        Alert(
            name="LLMReplicaStartupSlow",
            group=GROUP,
            query="max by (namespace, workload) (llm_replica_starting_oldest_seconds)",
            op=">",
            threshold=t.replica_startup_slow_seconds,
            for_=t.replica_startup_slow_for,
            severity="warning",
            summary=(
                "A replica of {{ $labels.namespace }}/{{ $labels.workload }} has been starting for "
                "{{ $value | humanizeDuration }}."
            ),
            description=(
                f"An engine pod is not Ready {number(t.replica_startup_slow_seconds)}s after it was created: capacity "
                "the autoscaler asked for is not arriving. Pending (see the placement panels), a slow image or weights "
                "pull, or a crash loop before Ready."
            ),
        ),
        Alert(
            name="LLMAutoscalerMaxedOut",
            group=GROUP,
            query=(
                "llm:autoscaler_at_max == 1 and on (namespace, workload)"
                f" (llm:workload_requests_waiting > {number(t.queue_waiting)})"
            ),
            for_=t.autoscaler_maxed_for,
            severity="warning",
            summary=(
                "The autoscaler {{ $labels.autoscaler }} of {{ $labels.namespace }}/{{ $labels.workload }} is at its "
                "maximum replicas while requests queue."
            ),
            description=(
                "It cannot add capacity: raise the maximum (GPUs permitting), or shed or reroute load. Users wait in "
                "the queue meanwhile."
            ),
        ),
        Alert(
            name="LLMRouteTimeoutBelowRequestDuration",
            group=GROUP,
            query=(
                p99("llm_request_duration_seconds", t.latency_window)
                + f" > on (namespace) group_left () {number(t.route_timeout_fraction)}"
                " * min by (namespace) (llm_route_timeout_seconds)"
            ),
            for_=t.route_timeout_for,
            severity="warning",
            summary=(
                "Requests to {{ $labels.namespace }}/{{ $labels.model }} take {{ $value | humanizeDuration }} (p99), "
                "close to the shortest route timeout in front of them."
            ),
            description=(
                f"The request-duration p99 is above {t.route_timeout_fraction:.0%} of the shortest Ingress or "
                "HTTPRoute timeout that reaches this namespace's engines: long generations are cut mid-stream and "
                "users see a broken answer. Raise the route timeout (llm_route_timeout_seconds says which) or cap "
                "max_tokens."
            ),
        ),
        Alert(
            name="LLMRouteBuffering",
            group=GROUP,
            query="llm_route_buffering",
            op="==",
            threshold=1,
            for_=t.route_buffering_for,
            severity="warning",
            summary="{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.route }} buffers engine responses.",
            description=(
                "The proxy collects the response before sending it on: a token stream reaches users in bursts, and "
                "time to first token as users feel it becomes the whole request. Turn buffering off for streaming "
                'routes (nginx.ingress.kubernetes.io/proxy-buffering: "off").'
            ),
        ),
        Alert(
            name="LLMClusterViewStale",
            group=GROUP,
            query="time() - llm_kubernetes_last_sync_timestamp_seconds",
            op=">",
            threshold=t.cluster_view_stale_seconds,
            for_=t.cluster_view_stale_for,
            severity="warning",
            summary="The cluster view of {{ $labels.instance }} is {{ $value | humanizeDuration }} old.",
            description=(
                "The exporter has not been in sync with the API server for a while: free GPU counts and pending "
                "reasons describe the past. Check the API server's reachability and the exporter's RBAC and logs."
            ),
        ),
    ]
