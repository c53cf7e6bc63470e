"""The exporter's two roles replayed as exposition into a real Prometheus 3, for the diagnose scenarios.

Each role is a loopback HTTP server answering /metrics with the series the exporter emits: the label sets of
the catalogue (exporter/catalogue), the histogram bounds the node role passes through from vLLM (the recorded
0.32.0 body in tests/fixtures), and counters that grow with the wall clock, so that Prometheus' rate() and the
bundle's recording rules see a live service. Prometheus scrapes both as job "llm-exporter" with honor_labels,
as the deploy/ monitors do, and evaluates the bundle's rule file every second.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from alerts import formats
from alerts.thresholds import DEFAULT
from tests.bundle.servers import Served, prometheus, query, wait_for

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/vllm/0.32.0.prom"

# canonical histogram -> the vLLM family the node role maps it from (its bucket bounds pass through)
HISTOGRAMS = {
    "llm_time_to_first_token_seconds": "vllm:time_to_first_token_seconds",
    "llm_request_duration_seconds": "vllm:e2e_request_latency_seconds",
    "llm_request_queue_time_seconds": "vllm:request_queue_time_seconds",
    "llm_request_prefill_time_seconds": "vllm:request_prefill_time_seconds",
    "llm_request_decode_time_seconds": "vllm:request_decode_time_seconds",
    "llm_inter_token_latency_seconds": "vllm:inter_token_latency_seconds",
}


def _bounds(family: str) -> list[float]:
    text = FIXTURE.read_text()
    found = re.findall(rf'^{re.escape(family)}_bucket{{[^}}]*le="([^"]+)"', text, re.MULTILINE)
    bounds = sorted({float(b) for b in found if b != "+Inf"})
    assert bounds, f"the fixture has no buckets of {family}"
    return bounds


BOUNDS = {name: _bounds(family) for name, family in HISTOGRAMS.items()}


@dataclass(frozen=True)
class Engine:
    """One engine pod as the node role reports it; every request of it takes the same times."""

    namespace: str
    pod: str
    model: str = "llama"
    version: str = "0.11.0"
    waiting: float = 0
    waiting_growth: float = 0  # requests per second added to the queue
    running: float = 4
    kv: float = 0.3
    rps: float = 1.0  # requests finished per second
    ttft: float = 0.3
    queue: float = 0.02
    prefill: float = 0.25
    decode: float = 6.0
    itl: float = 0.03
    duration: float = 6.5
    preemptions: float = 0  # per second
    prefix_hit_ratio: float = 0.5
    missing: tuple[str, ...] = ()  # canonical series the engine's version no longer exposes (renamed)

    def histogram_seconds(self, name: str) -> float:
        return {
            "llm_time_to_first_token_seconds": self.ttft,
            "llm_request_duration_seconds": self.duration,
            "llm_request_queue_time_seconds": self.queue,
            "llm_request_prefill_time_seconds": self.prefill,
            "llm_request_decode_time_seconds": self.decode,
            "llm_inter_token_latency_seconds": self.itl,
        }[name]


@dataclass(frozen=True)
class Autoscaler:
    namespace: str
    workload: str
    name: str
    kind: str = "hpa"  # "keda": the HPA a ScaledObject of the same name drives
    desired: float = 2
    minimum: float = 1
    maximum: float = 4


@dataclass(frozen=True)
class Workload:
    namespace: str
    name: str
    pods: tuple[str, ...]
    starting: float = 0
    starting_oldest: float = 0


@dataclass(frozen=True)
class Pending:
    namespace: str
    pod: str
    gpus: float
    reason: str = "fragmented"
    resource: str = "nvidia.com/gpu"


@dataclass(frozen=True)
class Node:
    name: str
    free: float
    allocatable: float = 8
    schedulable: bool = True


@dataclass(frozen=True)
class Route:
    namespace: str
    name: str
    timeout: float = 3600
    source: str = "annotation"
    kind: str = "Ingress"
    buffering: bool = False


@dataclass(frozen=True)
class EmptyQuery:
    """A KEDA trigger query the cluster role's watchdog found empty."""

    namespace: str
    name: str
    reason: str = "renamed"
    kind: str = "ScaledObject"
    location: str = "spec.triggers[0].metadata.query"


@dataclass(frozen=True)
class GatewayTenant:
    """A tenant's prompt tokens through the gateway the node role reads (LiteLLM), for one model."""

    tenant: str
    model: str
    tokens_per_second: float


@dataclass
class World:
    engines: list[Engine] = field(default_factory=list)
    autoscalers: list[Autoscaler] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    empty_queries: list[EmptyQuery] = field(default_factory=list)
    gateway_tenants: list[GatewayTenant] = field(default_factory=list)
    cluster_view_age: float = 3  # seconds since the cluster role's last sync
    started: float = field(default_factory=time.time)

    def add(self, other: World) -> World:
        for name in (
            "engines",
            "autoscalers",
            "workloads",
            "pending",
            "nodes",
            "routes",
            "empty_queries",
            "gateway_tenants",
        ):
            getattr(self, name).extend(getattr(other, name))
        return self


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _le(bound: float) -> str:
    return repr(float(bound))


def node_exposition(world: World, now: float) -> str:
    elapsed = now - world.started + 60  # as if the engines had served a minute before the first scrape
    out = [
        "# TYPE llm_exporter_collector_success gauge",
        'llm_exporter_collector_success{collector="engines"} 1',
        "# TYPE llm_exporter_collector_unavailable gauge",
        'llm_exporter_collector_unavailable{collector="engines"} 0',
    ]
    gauges: dict[str, list[str]] = {}
    counters: dict[str, list[str]] = {}
    histograms: dict[str, list[str]] = {name: [] for name in HISTOGRAMS}

    def gauge(name: str, labels: str, value: float) -> None:
        gauges.setdefault(name, []).append(f"{name}{labels} {value}")

    for e in world.engines:
        pod = {"namespace": e.namespace, "pod": e.pod, "engine": "vllm"}
        series = {**pod, "model": e.model, "dp_rank": "0"}
        gauge("llm_engine_up", _labels(**pod), 1)
        gauge("llm_engine_info", _labels(**pod, version=e.version, version_source="endpoint"), 1)
        for metric in ("llm_requests_waiting", "llm_requests_running", "llm_kv_cache_usage_ratio"):
            present = metric not in e.missing
            source = {"llm_requests_waiting": "vllm:num_requests_waiting"}.get(metric, metric)
            gauge(
                "llm_metric_present",
                _labels(**pod, metric=metric, source=source, version=e.version),
                1 if present else 0,
            )
        if "llm_requests_waiting" not in e.missing:
            gauge("llm_requests_waiting", _labels(**series), e.waiting + e.waiting_growth * (now - world.started))
        gauge("llm_requests_running", _labels(**series), e.running)
        gauge("llm_kv_cache_usage_ratio", _labels(**series), e.kv)
        count = e.rps * elapsed
        for name, value in (
            ("llm_requests_finished_total", count),
            ("llm_preemptions_total", e.preemptions * elapsed),
            ("llm_prefix_cache_queries_total", 1000 * count),
            ("llm_prefix_cache_hits_total", 1000 * count * e.prefix_hit_ratio),
            ("llm_prompt_tokens_total", 1000 * count),
            ("llm_generation_tokens_total", 200 * count),
        ):
            extra = {"finished_reason": "stop"} if name == "llm_requests_finished_total" else {}
            counters.setdefault(name, []).append(f"{name}{_labels(**series, **extra)} {value}")
        for name in HISTOGRAMS:
            seconds = e.histogram_seconds(name)
            observed = count * (200 if name == "llm_inter_token_latency_seconds" else 1)
            for bound in BOUNDS[name]:
                n = observed if seconds <= bound else 0
                histograms[name].append(f"{name}_bucket{_labels(**series, le=_le(bound))} {n}")
            histograms[name].append(f"{name}_bucket{_labels(**series, le='+Inf')} {observed}")
            histograms[name].append(f"{name}_sum{_labels(**series)} {seconds * observed}")
            histograms[name].append(f"{name}_count{_labels(**series)} {observed}")
    for t in world.gateway_tenants:
        labels = _labels(gateway="litellm", tenant=t.tenant, model=t.model, direction="prompt")
        counters.setdefault("llm_gateway_tokens_total", []).append(
            f"llm_gateway_tokens_total{labels} {t.tokens_per_second * elapsed}"
        )
    for kind, families in (("gauge", gauges), ("counter", counters), ("histogram", histograms)):
        for name, lines in families.items():
            if lines:
                out.append(f"# TYPE {name} {kind}")
                out.extend(lines)
    return "\n".join(out) + "\n"


def cluster_exposition(world: World, now: float) -> str:
    out = [
        "# TYPE llm_exporter_collector_success gauge",
        'llm_exporter_collector_success{collector="cluster"} 1',
        "# TYPE llm_kubernetes_last_sync_timestamp_seconds gauge",
        f"llm_kubernetes_last_sync_timestamp_seconds {now - world.cluster_view_age}",
    ]
    for w in world.workloads:
        ws = {"namespace": w.namespace, "workload": w.name}
        out += [f"llm_replica_pod_info{_labels(namespace=w.namespace, pod=p, workload=w.name)} 1" for p in w.pods]
        out.append(f"llm_replica_starting{_labels(**ws)} {w.starting}")
        out.append(f"llm_replica_starting_oldest_seconds{_labels(**ws)} {w.starting_oldest}")
    for a in world.autoscalers:
        labels = _labels(namespace=a.namespace, workload=a.workload, autoscaler=a.name, kind=a.kind)
        out += [
            f"llm_autoscaler_desired_replicas{labels} {a.desired}",
            f"llm_autoscaler_current_replicas{labels} {a.desired}",
            f"llm_autoscaler_min_replicas{labels} {a.minimum}",
            f"llm_autoscaler_max_replicas{labels} {a.maximum}",
        ]
    for p in world.pending:
        labels = _labels(namespace=p.namespace, pod=p.pod, resource=p.resource, reason=p.reason)
        out.append(f"llm_pending_pod_gpus_requested{labels} {p.gpus}")
    for n in world.nodes:
        out += [
            f"llm_node_gpus_free{_labels(node=n.name, resource='nvidia.com/gpu')} {n.free}",
            f"llm_node_gpus_allocatable{_labels(node=n.name, resource='nvidia.com/gpu')} {n.allocatable}",
            f"llm_node_schedulable{_labels(node=n.name)} {1 if n.schedulable else 0}",
        ]
    for r in world.routes:
        out.append(
            f"llm_route_timeout_seconds{_labels(namespace=r.namespace, route=r.name, kind=r.kind, source=r.source)}"
            f" {r.timeout}"
        )
        out.append(
            f"llm_route_buffering{_labels(namespace=r.namespace, route=r.name, kind=r.kind)} {1 if r.buffering else 0}"
        )
    for q in world.empty_queries:
        where = {"kind": q.kind, "namespace": q.namespace, "name": q.name, "location": q.location}
        out.append(f"llm_query_empty{_labels(**where)} 1")
        out.append(f"llm_query_empty_reason{_labels(**where, reason=q.reason)} 1")
    return "\n".join(out) + "\n"


def _serve(render: object) -> Served:
    def body(path: str) -> tuple[int, str]:
        if path != "/metrics":
            return 404, ""
        return 200, render(time.time())  # type: ignore[operator]

    return Served(body)


def rule_file(path: Path) -> Path:
    """The bundle's rule file as shipped, evaluated every second."""
    path.write_text(formats.rule_file(replace(DEFAULT, evaluation_interval="1s")))
    return path


@contextmanager
def replayed(world: World, workdir: Path, extra_targets: tuple[str, ...] = ()) -> Iterator[str]:
    """A real Prometheus scraping `world` (and `extra_targets`, e.g. a port nothing listens on) as job
    llm-exporter with the bundle's rules loaded; yields its URL once the recording rules have a history."""
    node = _serve(lambda now: node_exposition(world, now))
    cluster = _serve(lambda now: cluster_exposition(world, now))
    try:
        hosts = [node.url.split("//")[1], cluster.url.split("//")[1], *extra_targets]
        job = {"job_name": "llm-exporter", "honor_labels": True, "static_configs": [{"targets": hosts}]}
        workdir.mkdir(parents=True, exist_ok=True)
        with prometheus(workdir, [job], rule_files=[rule_file(workdir / "rules.yaml")]) as url:
            wait_for(
                lambda: bool(query(url, "count_over_time(llm:replica_requests_waiting[5m]) >= 12")),
                60,
                "twelve evaluations of the recording rules",
            )
            yield url
    finally:
        node.close()
        cluster.close()
