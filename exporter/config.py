"""The configuration schema: the YAML file's sections as frozen dataclasses, each with its checks.

Every key is optional. Unknown or ill-typed keys are errors that name the key path; all errors of a file are
reported at once (`ConfigError.errors`), so one edit fixes them all. The walk itself is
`exporter.typed_loader`'s; flags and environment override the file in `exporter.cli`.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from exporter import typed_loader, userinfo
from exporter.engines.registry import EngineName
from exporter.gateways import registry as gateway_registry
from exporter.gateways.reading import MAX_TENANT_LENGTH, NONE, OTHER
from exporter.typed_loader import Loader

# the loader's names that were defined here, for every importer of exporter.config
ConfigError = typed_loader.ConfigError
read_text = typed_loader.read_text
read_yaml = typed_loader.read_yaml
_quote = typed_loader.quote
_key_text = typed_loader.key_text
_literal_text = typed_loader.literal_text

DEFAULT_LISTEN = "0.0.0.0:8490"
DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


@dataclass(frozen=True)
class BasicAuth:
    username: str = ""
    password_file: str = ""  # a mounted Secret, read at every run (rotation needs no restart)


@dataclass(frozen=True)
class Target:
    """A static engine target: an engine outside Kubernetes, or a test server."""

    url: str
    labels: dict[str, str] = field(default_factory=dict)  # namespace, pod: the series identity
    # auto: the engine is found from its metrics body; a name overrides (and picks its metrics path)
    engine: EngineName = "auto"
    # an engine behind basic auth: the password in a mounted Secret, read at every scrape (rotation needs no
    # restart). Userinfo in the URL (http://user:pass@host) works too, but puts the password in the config
    basic_auth: BasicAuth = field(default_factory=BasicAuth)

    def validate(self) -> list[str]:
        errors = []
        if not _http_url(self.url):
            errors.append(f"url: {_quote(userinfo.masked_url(self.url))} is not an http(s) URL with a host")
        bad = sorted(set(self.labels) - {"namespace", "pod"})
        errors += [f"labels.{key}: only 'namespace' and 'pod' are allowed" for key in bad]
        if self.basic_auth.username or self.basic_auth.password_file:
            if userinfo.has_userinfo(self.url):
                errors.append("basic_auth: set either basic_auth or credentials in the url, not both")
            if not (self.basic_auth.username and self.basic_auth.password_file):
                errors.append("basic_auth: username and password_file go together")
        return errors


def _http_url(url: str) -> bool:
    """An http(s) URL with a host, and a port if any that is a number (a password with a raw "/", "?" or "#"
    would otherwise be read as a host and a port, and its tail as the path)."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # ValueError for a port that is not a number, or out of range
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # "http://[::1" (unclosed IPv6 host), netlocs that change under NFKC normalisation
        return False


@dataclass(frozen=True)
class KubernetesDiscovery:
    """Node role: scrape opted-in engine pods on this node (annotation `<prefix>/scrape: "true"`)."""

    enabled: bool = False
    node_name: str = ""  # default: $NODE_NAME (downward API)
    annotation_prefix: str = "llm-exporter.io"
    default_port: int = 8000
    default_path: str = "/metrics"


def _fetch_limit_errors(timeout_seconds: float, max_response_bytes: int) -> list[str]:
    """The limits every scraped target shares (engines and gateways alike)."""
    errors = []
    if not 0 < timeout_seconds <= 60:
        errors.append("timeout_seconds: must be in (0, 60]")
    if max_response_bytes < 1024:
        errors.append("max_response_bytes: must be at least 1024")
    return errors


@dataclass(frozen=True)
class Engines:
    timeout_seconds: float = 3.0
    max_response_bytes: int = 8 * 1024 * 1024
    max_series_per_target: int = 20000  # LoRA adapters and model names can explode cardinality
    max_label_value_length: int = 1024
    targets: list[Target] = field(default_factory=list)
    kubernetes_discovery: KubernetesDiscovery = field(default_factory=KubernetesDiscovery)

    def validate(self) -> list[str]:
        errors = _fetch_limit_errors(self.timeout_seconds, self.max_response_bytes)
        if self.max_series_per_target < 1:
            errors.append("max_series_per_target: must be positive")
        if self.max_label_value_length < 16:
            errors.append("max_label_value_length: must be at least 16")
        return errors


GATEWAY_KINDS = (gateway_registry.AUTO, *gateway_registry.NAMES)
# the gateway labels a tenant is read from, in order: the first that is set names it
DEFAULT_TENANT_LABELS = ("team_alias", "team", "api_key_alias", "user", "end_user")
# labels that carry a key, a key's hash or a token: never a tenant name (a credential must not become a label)
SECRET_LABELS = frozenset({"hashed_api_key", "api_key", "api_key_hash", "token", "authorization"})
MAX_REQUEST_KINDS = 20
RESERVED_KINDS = frozenset({OTHER, NONE})  # the kinds of the tokens of an unlisted kind and of none


@dataclass(frozen=True)
class GatewayTarget:
    """A gateway (an LLM proxy in front of engines, which knows the tenants) to scrape."""

    url: str
    labels: dict[str, str] = field(default_factory=dict)  # gateway: the series' `gateway` (default host:port)
    kind: str = "auto"  # auto: found from its metrics body
    basic_auth: BasicAuth = field(default_factory=BasicAuth)
    # a bearer token in a mounted Secret, read at every scrape (LiteLLM asks for a key on /metrics by default)
    bearer_token_file: str = ""

    def validate(self) -> list[str]:
        errors = []
        if not _http_url(self.url):
            errors.append(f"url: {_quote(userinfo.masked_url(self.url))} is not an http(s) URL with a host")
        errors += [f"labels.{key}: only 'gateway' is allowed" for key in sorted(set(self.labels) - {"gateway"})]
        if self.kind not in GATEWAY_KINDS:
            errors.append(f"kind: {_quote(self.kind)} is not one of {', '.join(GATEWAY_KINDS)}")
        if self.basic_auth.username or self.basic_auth.password_file:
            if userinfo.has_userinfo(self.url):
                errors.append("basic_auth: set either basic_auth or credentials in the url, not both")
            if not (self.basic_auth.username and self.basic_auth.password_file):
                errors.append("basic_auth: username and password_file go together")
            if self.bearer_token_file:
                errors.append("bearer_token_file: set either bearer_token_file or basic_auth, not both")
        return errors


@dataclass(frozen=True)
class Gateways:
    """Node role: per-tenant tokens, requests and spend from LLM gateways (llm_gateway_*)."""

    timeout_seconds: float = 3.0
    max_response_bytes: int = 32 * 1024 * 1024  # a gateway exposes one series per tenant, key and model
    targets: list[GatewayTarget] = field(default_factory=list)
    tenant_labels: list[str] = field(default_factory=lambda: list(DEFAULT_TENANT_LABELS))
    max_tenants_per_model: int = 50  # the top N by tokens keep their name, the rest are tenant="other"
    tenant_idle_seconds: float = 3600.0  # a tenant whose counts did not move for this long loses its name
    # the request kind of the tokens (a route, a tag, a mapped header): the first of these labels that is set;
    # empty: tokens carry no request_kind. Only the values in request_kinds keep their name, the rest are "other"
    request_kind_labels: list[str] = field(default_factory=list)
    request_kinds: list[str] = field(default_factory=list)

    def validate(self) -> list[str]:
        errors = _fetch_limit_errors(self.timeout_seconds, self.max_response_bytes)
        if not self.tenant_labels:
            errors.append("tenant_labels: must name at least one label")
        for key, names in (("tenant_labels", self.tenant_labels), ("request_kind_labels", self.request_kind_labels)):
            for name in names:
                if name is typed_loader.INVALID:  # an ill-typed item, already reported by the loader
                    continue
                if not _label(name):
                    errors.append(f"{key}: {_quote(name)} is not a label name")
                elif name in SECRET_LABELS:
                    errors.append(f"{key}: {_quote(name)} carries a key or token, never a name to export")
        if self.request_kind_labels and not self.request_kinds:
            errors.append("request_kinds: list the request kinds to keep by name (the others are counted as other)")
        if len(self.request_kinds) > MAX_REQUEST_KINDS:
            errors.append(f"request_kinds: at most {MAX_REQUEST_KINDS} (each is a series per tenant and model)")
        for kind in self.request_kinds:
            if kind is not typed_loader.INVALID and (
                not kind or len(kind) > MAX_TENANT_LENGTH or kind in RESERVED_KINDS
            ):
                errors.append(
                    f"request_kinds: {_quote(kind)} must be 1 to {MAX_TENANT_LENGTH} characters, not other or none"
                )
        if not 1 <= self.max_tenants_per_model <= 10000:
            errors.append("max_tenants_per_model: must be in [1, 10000]")
        if not 60 <= self.tenant_idle_seconds <= 30 * 86400:  # also false for NaN
            errors.append("tenant_idle_seconds: must be in [60, 2592000]")
        return errors


@dataclass(frozen=True)
class Gpu:
    enabled: Literal["auto", "true", "false"] = "auto"  # auto: on when NVML loads
    pod_resources_socket: str = DEFAULT_POD_RESOURCES_SOCKET
    pod_resources_refresh_seconds: float = 10.0
    # per-process GPU memory mapped to pods: the host's /proc as mounted into the exporter (for cgroups)
    proc_root: str = "/proc"
    # llm_gpu_allocated_idle: an assigned GPU with no process of its container, or with utilisation below
    # allocated_idle_utilization, for this long
    allocated_idle_seconds: float = 1800.0
    allocated_idle_utilization: float = 0.05

    def validate(self) -> list[str]:
        errors = []
        if not 0 < self.pod_resources_refresh_seconds <= 3600:  # also false for NaN
            errors.append("pod_resources_refresh_seconds: must be in (0, 3600]")
        if not 0 < self.allocated_idle_seconds <= 7 * 86400:
            errors.append("allocated_idle_seconds: must be in (0, 604800]")
        if not 0 <= self.allocated_idle_utilization < 1:
            errors.append("allocated_idle_utilization: must be in [0, 1)")
        return errors


@dataclass(frozen=True)
class Routes:
    """Cluster role: the timeouts of Ingresses and HTTPRoutes that reach engine Services."""

    enabled: bool = True
    ingress_default_timeout_seconds: float = 60.0  # ingress-nginx's proxy-read-timeout when unset
    httproute_default_timeout_seconds: float = 0.0  # implementation-specific when unset; 0: no series
    openshift_route_default_timeout_seconds: float = 30.0  # the OpenShift router's timeout when unset

    def validate(self) -> list[str]:
        errors = []
        for name in (
            "ingress_default_timeout_seconds",
            "httproute_default_timeout_seconds",
            "openshift_route_default_timeout_seconds",
        ):
            if not 0 <= getattr(self, name) <= 86400:  # also false for NaN
                errors.append(f"{name}: must be in [0, 86400] (0: no default)")
        return errors


@dataclass(frozen=True)
class Tls:
    ca_file: str = ""
    insecure_skip_verify: bool = False


@dataclass(frozen=True)
class WatchdogPrometheus:
    """The Prometheus the watchdog queries: what dashboards and KEDA read, not the exporter's own scrape."""

    url: str = ""
    bearer_token_file: str = ""
    basic_auth: BasicAuth = field(default_factory=BasicAuth)
    tls: Tls = field(default_factory=Tls)
    # Thanos Query over Prometheus replicas: the labels that tell replicas apart, deduplicated on and left out
    # of the verdicts (e.g. [replica, prometheus_replica]); empty: what Query runs with (--query.replica-label)
    replica_labels: list[str] = field(default_factory=list)

    def validate(self) -> list[str]:
        errors = [
            f"replica_labels: {_quote(n)} is not a label name"
            for n in self.replica_labels
            if n is not typed_loader.INVALID and not _label(n)  # an ill-typed item is reported by the loader
        ]
        if self.url and not _http_url(self.url):
            errors.append(f"url: {_quote(userinfo.masked_url(self.url))} is not an http(s) URL with a host")
        if self.bearer_token_file and (self.basic_auth.username or self.basic_auth.password_file):
            errors.append("bearer_token_file: set either bearer_token_file or basic_auth, not both")
        if bool(self.basic_auth.username) != bool(self.basic_auth.password_file):
            errors.append("basic_auth: username and password_file go together")
        return errors


def _label(name: str) -> bool:
    """A Prometheus label name that is not reserved."""
    return name.isascii() and name.replace("_", "a").isalnum() and not name[:1].isdigit() and not name.startswith("__")


@dataclass(frozen=True)
class Watchdog:
    """Cluster role: run the queries of KEDA ScaledObjects/ScaledJobs and dashboard ConfigMaps periodically."""

    enabled: bool = False
    prometheus: WatchdogPrometheus = field(default_factory=WatchdogPrometheus)
    interval_seconds: float = 180.0
    timeout_seconds: float = 30.0  # per Prometheus request
    dashboard_label: str = "grafana_dashboard"  # the Grafana sidecar's default label
    max_queries: int = 2000  # bound on llm_query_empty series
    # one store of many clusters (Thanos Query): this cluster's value of `cluster_label`. Trigger queries are
    # checked as this cluster's KEDA sees them (`cluster_label="cluster"` on every selector) and dashboards'
    # cluster variable resolves to it; empty: the Prometheus holds this cluster alone
    cluster: str = ""
    cluster_label: str = "cluster"  # render --cluster-label, the chart's clusterLabel

    def validate(self) -> list[str]:
        errors = []
        if not _label(self.cluster_label):
            errors.append(f"cluster_label: {_quote(self.cluster_label)} is not a label name")
        if self.enabled and not self.prometheus.url:
            errors.append("prometheus.url: required when the watchdog is enabled")
        if not 10 <= self.interval_seconds <= 86400:  # also false for NaN
            errors.append("interval_seconds: must be in [10, 86400]")
        if not 0 < self.timeout_seconds <= 300:
            errors.append("timeout_seconds: must be in (0, 300]")
        if not self.dashboard_label:
            errors.append("dashboard_label: must not be empty")
        if self.max_queries < 1:
            errors.append("max_queries: must be positive")
        return errors


@dataclass(frozen=True)
class Replicas:
    """Cluster role: how long engine replicas take to start (llm_replica_startup_seconds)."""

    enabled: bool = True


@dataclass(frozen=True)
class Audit:
    """Cluster role: each engine workload against the deployment checks (llm_workload_check_failing)."""

    enabled: bool = True


@dataclass(frozen=True)
class Cluster:
    # Engine pods, for routes and replica start-up: opted in with <prefix>/scrape: "true" (as for the node
    # role's discovery), or, when set, selected by this label selector (filtered by the API server: cheaper)
    engine_annotation_prefix: str = "llm-exporter.io"
    engine_label_selector: str = ""
    routes: Routes = field(default_factory=Routes)
    replicas: Replicas = field(default_factory=Replicas)
    watchdog: Watchdog = field(default_factory=Watchdog)
    audit: Audit = field(default_factory=Audit)
    page_size: int = 500
    max_pending_pods: int = 1000  # bound on llm_pending_pod_gpus_requested series
    resync_seconds: float = 0.0  # 0: rely on watches only

    def validate(self) -> list[str]:
        errors = []
        if self.page_size < 1:
            errors.append("page_size: must be positive")
        if self.max_pending_pods < 1:
            errors.append("max_pending_pods: must be positive")
        if not 0 <= self.resync_seconds <= 86400:  # also false for NaN
            errors.append("resync_seconds: must be in [0, 86400] (0: watches only)")
        return errors


@dataclass(frozen=True)
class Cost:
    """Cluster role: the price of a GPU-hour per GPU model, exported as `llm_gpu_price_per_second`.

    Keys are GPU model names exactly as NVML reports them (`llm_gpu_info{name}`, e.g. "NVIDIA H100 80GB HBM3");
    no price is shipped, and a model without one gets no cost series (never 0)."""

    gpu_hour_prices: dict[str, float] = field(default_factory=dict)
    currency: str = ""  # e.g. USD; required with prices (the `currency` label of every price)

    def validate(self) -> list[str]:
        errors = []
        for name, price in self.gpu_hour_prices.items():
            if not name.strip():
                errors.append("gpu_hour_prices: a GPU model name must not be empty")
            elif not 0 < price < math.inf:  # also false for NaN
                errors.append(f"gpu_hour_prices.{name}: must be a positive price per GPU-hour, got {_quote(price)}")
        if self.gpu_hour_prices and not self.currency.strip():
            errors.append("currency: required with gpu_hour_prices (e.g. USD)")
        if len(self.currency) > 16:
            errors.append(f"currency: {_quote(self.currency)} is longer than 16 characters")
        return errors


@dataclass(frozen=True)
class Config:
    engines: Engines = field(default_factory=Engines)
    gateways: Gateways = field(default_factory=Gateways)
    gpu: Gpu = field(default_factory=Gpu)
    cluster: Cluster = field(default_factory=Cluster)
    cost: Cost = field(default_factory=Cost)


def load(path: str | Path | None) -> Config:
    """The configuration in `path` (YAML), or the defaults when `path` is None."""
    if path is None:
        return Config()
    return parse(read_text(path), source=str(path))


def parse(text: str, source: str = "<config>") -> Config:
    """The configuration in `text` (YAML); a ConfigError lists every bad key."""
    return typing.cast(Config, Loader().load(Config, read_yaml(text, source)))
