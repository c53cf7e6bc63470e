"""The table of collectors: which collectors each `serve --role` runs, what turns each on, how it is built.

One row per collector, in the order the role runs them (and exposes their families):

    name                 role     enabled by                              built from
    engine_discovery     node     engines.kubernetes_discovery.enabled    exporter.engines.kubernetes
    engines              node     (always)                                exporter.engines.collector
    gateways             node     (always; none without gateways.targets) exporter.gateways.collector
    replica_first_token  node     engines.kubernetes_discovery.enabled    exporter.replicas.collector
    gpu                  node     gpu.enabled (auto or true)              exporter.gpu.collector (gpu, gpu_pods)
    cluster              cluster  (always)                                exporter.kube.collector
    routes               cluster  cluster.routes.enabled                  exporter.routes.collector
    replicas             cluster  cluster.replicas.enabled                exporter.replicas.collector
    audit                cluster  cluster.audit.enabled                   exporter.audit.collector
    watchdog             cluster  cluster.watchdog.enabled                exporter.watchdog.collector
    prices               cluster  (always; none without cost.gpu_hour_prices) exporter.pricing

`serve --collector.<name>` / `--no-collector.<name>` (the exporter-toolkit spelling) override the config
switch of one row: a flag that turns on a collector whose switch is off sets that switch to true (and the
section's checks then apply, e.g. the watchdog's prometheus.url); one that turns it off leaves the switch
alone, so a row sharing its switch with another is unaffected. A collector needs the rows in its `needs`:
turned on by a flag without them it is an error, on by the config alone it is left off with them.

Collectors that share a source share it here, built once per role (`Wiring.part`): the engine discovery
feeds the engine collector its targets and the first-token tracker its pods; routes, replicas and audit read
one engine-pod watch, and the audit reads the replicas' start-up histograms.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from exporter.collect import Collector, CollectorSet
from exporter.config import Config, ConfigError

if TYPE_CHECKING:
    from exporter.engines.kubernetes import DiscoveredTargets
    from exporter.replicas.collector import FirstTokenCollector, ReplicasCollector

Role = Literal["node", "cluster"]
ROLES: tuple[Role, ...] = ("node", "cluster")
T = TypeVar("T")


class Wiring:
    """What the build functions of one role share: the config, the kubeconfig, the rows that are on, and the
    parts that two collectors read (built by the first that asks)."""

    def __init__(self, config: Config, kubeconfig: str | None, on: frozenset[str]) -> None:
        self.config = config
        self.kubeconfig = kubeconfig
        self.on = on
        self._parts: dict[str, Any] = {}

    def part(self, key: str, make: Callable[[], T]) -> T:
        if key not in self._parts:
            self._parts[key] = make()
        return typing.cast(T, self._parts[key])


@dataclass(frozen=True)
class Entry:
    """One row of the table."""

    name: str  # the collector's name: its `collector` label, its --collector.<name> flag
    role: Role
    enabled_by: str | None  # the config switch (a dotted path), None: always on
    build: Callable[[Wiring], list[Collector]]  # the collectors of the row, not started
    needs: tuple[str, ...] = ()  # rows of the same role it reads from
    help: str = ""


# ---- the build functions (imports are local: a role loads only the code of its own collectors)


def _discovered(w: Wiring) -> DiscoveredTargets:
    from exporter.engines.kubernetes import DiscoveredTargets

    return w.part("discovered", lambda: DiscoveredTargets(w.config.engines.kubernetes_discovery, w.kubeconfig))


def _first_tokens(w: Wiring) -> FirstTokenCollector:
    from exporter.replicas.collector import FirstTokenCollector

    return w.part("first_tokens", lambda: FirstTokenCollector(_discovered(w).pods))


def _engine_discovery(w: Wiring) -> list[Collector]:
    return [_discovered(w)]


def _engines(w: Wiring) -> list[Collector]:
    from exporter.engines.collector import EngineCollector

    if "engine_discovery" not in w.on:
        return [EngineCollector(w.config.engines)]
    observers = [_first_tokens(w).observe] if "replica_first_token" in w.on else []
    return [EngineCollector(w.config.engines, _discovered(w).targets, observers=observers)]


def _gateways(w: Wiring) -> list[Collector]:
    from exporter.gateways.collector import GatewayCollector

    return [GatewayCollector(w.config.gateways)]


def _replica_first_token(w: Wiring) -> list[Collector]:
    return [_first_tokens(w)]


def _gpu(w: Wiring) -> list[Collector]:
    from exporter.gpu.collector import gpu_collectors

    return gpu_collectors(w.config.gpu, w.kubeconfig)


def _cluster(w: Wiring) -> list[Collector]:
    from exporter.kube.collector import build_cluster_collectors

    return build_cluster_collectors(w.config.cluster, w.kubeconfig)


def _engine_api(w: Wiring) -> Any | None:
    """The API client of the engine-pod collectors; None without a kubeconfig (the cluster collector reports
    the missing configuration: one failure, said once)."""
    from exporter.sources.kube_connect import KubeConfigError, connect

    def make() -> Any | None:
        try:
            return connect(w.kubeconfig)
        except KubeConfigError:
            return None

    return w.part("engine_api", make)


def _engine_pods(w: Wiring, api: Any) -> Any:
    """The one engine-pod watch: started with the first collector that reads it, stopped with the last."""
    from exporter.replicas.engine_pods import engine_pods

    return w.part("engine_pods", lambda: engine_pods(api, w.config.cluster))


def _routes(w: Wiring) -> list[Collector]:
    from exporter.routes.collector import RoutesCollector, make_reflectors

    api = _engine_api(w)
    if api is None:
        return []
    reflectors = make_reflectors(api, w.config.cluster.routes, w.config.cluster.page_size)
    return [RoutesCollector({**reflectors, "pods": _engine_pods(w, api)})]


def _replicas_collector(w: Wiring, api: Any) -> ReplicasCollector:
    from exporter.replicas.engine_pods import replicas_collector

    return w.part("replicas", lambda: replicas_collector(api, _engine_pods(w, api), w.config.cluster.page_size))


def _replicas(w: Wiring) -> list[Collector]:
    api = _engine_api(w)
    return [] if api is None else [_replicas_collector(w, api)]


def _audit(w: Wiring) -> list[Collector]:
    from exporter.audit.collector import AuditCollector
    from exporter.audit.recognise import Recognition
    from exporter.k8s.selectors import parse_label_selector

    api = _engine_api(w)
    if api is None:
        return []
    cluster = w.config.cluster
    histograms = _replicas_collector(w, api).startup_histograms if "replicas" in w.on else None
    how = Recognition(
        f"{cluster.engine_annotation_prefix}/scrape",
        parse_label_selector(cluster.engine_label_selector) if cluster.engine_label_selector else None,
    )
    return [AuditCollector.from_api(api, histograms, how, page_size=cluster.page_size)]


def _watchdog(w: Wiring) -> list[Collector]:
    from exporter.watchdog.collector import watchdog_collectors

    return list(watchdog_collectors(w.config.cluster.watchdog, w.kubeconfig))


def _prices(w: Wiring) -> list[Collector]:
    from exporter.pricing import build_price_collectors

    return build_price_collectors(w.config.cost)


DISCOVERY = "engines.kubernetes_discovery.enabled"
TABLE: tuple[Entry, ...] = (
    Entry("engine_discovery", "node", DISCOVERY, _engine_discovery, help="engine pods on this node"),
    Entry("engines", "node", None, _engines, help="engine targets, mapped to llm_*"),
    Entry("gateways", "node", None, _gateways, help="gateway targets: tokens and spend per tenant"),
    Entry(
        "replica_first_token",
        "node",
        DISCOVERY,
        _replica_first_token,
        needs=("engine_discovery", "engines"),
        help="ready -> first token of discovered replicas",
    ),
    Entry("gpu", "node", "gpu.enabled", _gpu, help="NVML readings and GPU pod attribution"),
    Entry("cluster", "cluster", None, _cluster, help="GPU capacity, allocation and pending pods"),
    Entry("routes", "cluster", "cluster.routes.enabled", _routes, help="route timeouts to engine Services"),
    Entry("replicas", "cluster", "cluster.replicas.enabled", _replicas, help="engine replica start-ups"),
    Entry("audit", "cluster", "cluster.audit.enabled", _audit, help="engine workloads against the checks"),
    Entry("watchdog", "cluster", "cluster.watchdog.enabled", _watchdog, help="KEDA and dashboard queries"),
    Entry("prices", "cluster", None, _prices, help="GPU-hour prices of cost.gpu_hour_prices, when set"),
)
BY_NAME = {entry.name: entry for entry in TABLE}


def _get(config: Config, path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _set(obj: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    head, *rest = path
    return dataclasses.replace(obj, **{head: _set(getattr(obj, head), rest, value)})


def check_name(name: str) -> None:
    """A ValueError for a name that is no collector's."""
    if name not in BY_NAME:
        raise ValueError(f"--collector.{name}: unknown collector (known: {', '.join(e.name for e in TABLE)})")


def switched_on(value: Any) -> bool:
    """A config switch's value as on or off: `true`, or gpu.enabled's `auto`/`true`."""
    return value is True or value in ("auto", "true")


def resolve(role: str, config: Config, flags: Mapping[str, bool] | None = None) -> tuple[Config, list[Entry]]:
    """The config with the switches the flags turn on set, and the rows of `role` that run, in table order.

    `flags`: collector name -> on (`--collector.<name>`) or off (`--no-collector.<name>`). An unknown name,
    one of the other role, or a flag that turns on a collector without a row it needs is a ValueError; a
    switch turned on whose section then fails its checks is a ConfigError naming the flag.
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    flags = dict(flags or {})
    for name in flags:
        check_name(name)
        entry = BY_NAME[name]
        if entry.role != role:
            raise ValueError(f"--collector.{name}: a collector of the {entry.role} role, not of --role {role}")
    for name, wanted in flags.items():
        path = BY_NAME[name].enabled_by
        if wanted and path is not None and not switched_on(_get(config, path)):
            value = "true" if isinstance(_get(config, path), str) else True
            config = _set(config, path.split("."), value)
            section, _, _ = path.rpartition(".")
            validate = getattr(_get(config, section), "validate", None)
            errors = validate() if validate is not None else []
            if errors:
                raise ConfigError([f"--collector.{name} ({path}: true): {section}.{e}" for e in errors])
    running = {
        e.name
        for e in TABLE
        if e.role == role and flags.get(e.name, e.enabled_by is None or switched_on(_get(config, e.enabled_by)))
    }
    for entry in TABLE:  # table order: a row's needs come before it
        missing = [n for n in entry.needs if n not in running]
        if entry.name in running and missing:
            if flags.get(entry.name):
                raise ValueError(f"--collector.{entry.name}: needs the {', '.join(missing)} collector, which is off")
            running.discard(entry.name)
    return config, [e for e in TABLE if e.name in running]


def build_collectors(
    role: str,
    config: Config,
    kubeconfig: str | None,
    flags: Mapping[str, bool] | None = None,
    only: frozenset[str] | None = None,
) -> list[Collector]:
    """The collectors of `role` that run, not yet started; `only`: of these rows alone (the others off)."""
    config, entries = resolve(role, config, flags)
    if only is not None:
        entries = [e for e in entries if e.name in only]
    wiring = Wiring(config, kubeconfig, frozenset(e.name for e in entries))
    return [collector for entry in entries for collector in entry.build(wiring)]


def build(role: str, config: Config, kubeconfig: str | None, flags: Mapping[str, bool] | None = None) -> CollectorSet:
    """The collectors of `role` ("node" or "cluster"), not yet started."""
    return CollectorSet(build_collectors(role, config, kubeconfig, flags))
