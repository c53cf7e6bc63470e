"""Configuration: YAML file, then environment, then flags, into frozen dataclasses.

Every key is optional. Unknown or ill-typed keys are errors that name the key path; all errors of a file are
reported at once (`ConfigError.errors`), so one edit fixes them all.
"""

from __future__ import annotations

import dataclasses
import math
import reprlib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

import yaml

from exporter.engines.registry import EngineName

DEFAULT_LISTEN = "0.0.0.0:8490"
DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


class ConfigError(Exception):
    """One or more configuration errors, each naming its key."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {e}" for e in errors))


@dataclass(frozen=True)
class Target:
    """A static engine target: an engine outside Kubernetes, or a test server."""

    url: str
    labels: dict[str, str] = field(default_factory=dict)  # namespace, pod: the series identity
    # auto: the engine is found from its metrics body; a name overrides (and picks its metrics path)
    engine: EngineName = "auto"

    def validate(self) -> list[str]:
        errors = []
        try:
            parts = urlsplit(self.url)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:  # "http://[::1" (unclosed IPv6 host), netlocs that change under NFKC normalisation
            valid = False
        if not valid:
            errors.append(f"url: {_quote(self.url)} is not an http(s) URL with a host")
        bad = sorted(set(self.labels) - {"namespace", "pod"})
        errors += [f"labels.{key}: only 'namespace' and 'pod' are allowed" for key in bad]
        return errors


@dataclass(frozen=True)
class KubernetesDiscovery:
    """Node role: scrape opted-in engine pods on this node (annotation `<prefix>/scrape: "true"`)."""

    enabled: bool = False
    node_name: str = ""  # default: $NODE_NAME (downward API)
    annotation_prefix: str = "llm-exporter.io"
    default_port: int = 8000
    default_path: str = "/metrics"


@dataclass(frozen=True)
class Engines:
    timeout_seconds: float = 3.0
    max_response_bytes: int = 8 * 1024 * 1024
    max_series_per_target: int = 20000  # LoRA adapters and model names can explode cardinality
    max_label_value_length: int = 1024
    targets: list[Target] = field(default_factory=list)
    kubernetes_discovery: KubernetesDiscovery = field(default_factory=KubernetesDiscovery)

    def validate(self) -> list[str]:
        errors = []
        if not 0 < self.timeout_seconds <= 60:
            errors.append("timeout_seconds: must be in (0, 60]")
        if self.max_response_bytes < 1024:
            errors.append("max_response_bytes: must be at least 1024")
        if self.max_series_per_target < 1:
            errors.append("max_series_per_target: must be positive")
        if self.max_label_value_length < 16:
            errors.append("max_label_value_length: must be at least 16")
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
class BasicAuth:
    username: str = ""
    password_file: str = ""  # a mounted Secret, read at every run (rotation needs no restart)


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
        errors = [f"replica_labels: {_quote(n)} is not a label name" for n in self.replica_labels if not _label(n)]
        if self.url:
            try:
                parts = urlsplit(self.url)
                valid = parts.scheme in ("http", "https") and bool(parts.hostname)
            except ValueError:
                valid = False
            if not valid:
                errors.append(f"url: {_quote(self.url)} is not an http(s) URL with a host")
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
    gpu: Gpu = field(default_factory=Gpu)
    cluster: Cluster = field(default_factory=Cluster)
    cost: Cost = field(default_factory=Cost)


def load(path: str | Path | None) -> Config:
    """The configuration in `path` (YAML), or the defaults when `path` is None."""
    if path is None:
        return Config()
    return parse(read_text(path), source=str(path))


def read_text(path: str | Path) -> str:
    """A config file's text; unreadable or non-UTF-8 files are a ConfigError naming the file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{path}: not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}"]) from exc


def read_yaml(text: str, source: str) -> Any:
    """The YAML document in `text`; anything PyYAML cannot build is a ConfigError naming `source`."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: not valid YAML: {exc}"]) from exc
    except (ValueError, LookupError, AttributeError, OverflowError) as exc:
        # PyYAML's constructors raise these, not YAMLError, for scalars they cannot build: `2001-13-45` and
        # `0000-01-01` (datetime), `!!int abc`, an int of more than 4300 digits (Python's int-from-text
        # limit): ValueError; `!!bool x`: KeyError; `!!int ''`: IndexError; `!!timestamp x`: AttributeError.
        raise ConfigError([f"{source}: not valid YAML: {type(exc).__name__}: {exc}"]) from exc
    except RecursionError as exc:  # PyYAML's composer recurses once per level: `[[[[…`
        raise ConfigError([f"{source}: not valid YAML: nested too deeply"]) from exc


def parse(text: str, source: str = "<config>") -> Config:
    data = read_yaml(text, source)
    if data is None:
        data = {}
    errors: list[str] = []
    config = _build(Config, data, "", errors)
    if errors:
        raise ConfigError(errors)
    return typing.cast(Config, config)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _build(tp: Any, value: Any, path: str, errors: list[str]) -> Any:
    """Check `value` against type `tp`, recording errors under `path`; returns the typed value."""
    where = path or "config"
    origin = get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            errors.append(f"{where}: expected a mapping, got {_kind(value)}")
            return None
        hints = typing.get_type_hints(tp)
        fields = {f.name: f for f in dataclasses.fields(tp)}
        kwargs: dict[str, Any] = {}
        for key, item in value.items():
            if key not in fields:
                known = ", ".join(sorted(fields))
                errors.append(f"{_join(path, _key_text(key))}: unknown key (known: {known})")
                continue
            kwargs[key] = _build(hints[key], item, _join(path, key), errors)
        missing = [
            name
            for name, f in fields.items()
            if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        errors.extend(f"{_join(path, name)}: required key missing" for name in missing)
        if missing or any(v is None for v in kwargs.values()):
            return None  # the errors are recorded; do not build a half-valid object
        obj = typing.cast(Any, tp)(**kwargs)
        validate = getattr(obj, "validate", None)
        if validate is not None:
            errors.extend(f"{_join(path, msg)}" for msg in validate())
        return obj
    if origin is Literal:
        allowed = get_args(tp)
        text = _literal_text(value)
        if text not in allowed:
            errors.append(f"{where}: must be one of {', '.join(map(str, allowed))}, got {_quote(value)}")
            return None
        return text
    if origin is list:
        if not isinstance(value, list):
            errors.append(f"{where}: expected a list, got {_kind(value)}")
            return None
        (item_tp,) = get_args(tp)
        return [_build(item_tp, item, _join(path, i), errors) for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            errors.append(f"{where}: expected a mapping, got {_kind(value)}")
            return None
        _, item_tp = get_args(tp)
        if item_tp is not str:  # keys are strings; values of their own type, checked under their key
            keys = [k for k in value if not isinstance(k, str)]
            errors.extend(f"{_join(path, _key_text(k))}: keys must be strings" for k in keys)
            items = {k: _build(item_tp, v, _join(path, k), errors) for k, v in value.items() if isinstance(k, str)}
            return None if keys or None in items.values() else items
        bad = [k for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
        for key in bad:
            errors.append(f"{_join(path, _key_text(key))}: keys and values must be strings")
        return None if bad else dict(value)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return None
        (inner,) = [a for a in get_args(tp) if a is not type(None)]
        return _build(inner, value, path, errors)
    return _scalar(tp, value, where, errors)


def _literal_text(value: Any) -> Any:
    if isinstance(value, bool):  # YAML reads `enabled: true` as a bool
        return "true" if value else "false"
    return value


def _scalar(tp: Any, value: Any, where: str, errors: list[str]) -> Any:
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:  # an int beyond 1.8e308
                errors.append(f"{where}: expected float, got an int too large for a float")
                return None
    elif tp is str:
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - a field type this loader does not know
        raise TypeError(f"unsupported config type {tp!r}")
    errors.append(f"{where}: expected {tp.__name__}, got {_kind(value)}")
    return None


_REPR = reprlib.Repr()  # Python 3.11's Repr takes no keyword arguments
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 2, 4, 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 60


def _quote(value: Any) -> str:
    """repr(value), bounded: a YAML alias bomb is small as text but astronomically large written out."""
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int of more than 4300 digits (YAML reads `0x…` of any length) has no decimal repr
        return f"<{type(value).__name__} too large to write out>"
    return text if len(text) <= 80 else text[:77] + "..."


def _key_text(key: Any) -> str:
    """A mapping key as an error's path names it: str(key), or _quote's placeholder where str() refuses."""
    try:
        return str(key)
    except ValueError:
        return _quote(key)


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {_quote(value)}"[:80]
