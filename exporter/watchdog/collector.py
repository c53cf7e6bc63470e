"""The watchdog collector (cluster role): watches KEDA objects and dashboard ConfigMaps, checks their queries.

Checks run in a background thread every `interval_seconds`; `collect()` only reads the stored verdicts, so a
slow or failing Prometheus never delays or breaks /metrics. When Prometheus cannot be reached the previous
verdicts are kept (and errors counted): an outage of the watchdog must not resolve a real alert.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from exporter.config import Watchdog, WatchdogPrometheus
from exporter.exposition import Family
from exporter.logs import LIMIT_KEY
from exporter.sources.kube_connect import KubeConfigError, connect
from exporter.sources.kube_mirror import Mirror, Reflectors
from exporter.sources.kube_shared import shared
from exporter.sources.prometheus import HttpPrometheus, Prometheus, PrometheusError, read_secret, tls_context
from exporter.watchdog import model
from exporter.watchdog.adapter import Cluster, Evaluator, Query, keda_query
from exporter.watched import Watching

log = logging.getLogger(__name__)

Watched = tuple[model.WatchedQuery, ...]


def make_reflectors(api: Any, config: Watchdog) -> dict[str, Mirror[Watched]]:
    """Views of the role's one watch of each resource (the audit reads ScaledObjects too)."""
    return {
        # the KEDA CRDs may be absent: optional, so a 404 reads as none (llm_query_source_available 0)
        "scaledobjects": shared(api, "scaledobjects", optional=True).view(model.scaler_queries("ScaledObject")),
        "scaledjobs": shared(api, "scaledjobs", optional=True).view(model.scaler_queries("ScaledJob")),
        "configmaps": shared(api, "configmaps", label_selector=config.dashboard_label).view(model.dashboards),
    }


def prometheus_client(config: WatchdogPrometheus, timeout: float) -> Prometheus:
    """A client with the credentials as mounted now (read at every run: a rotated Secret needs no restart)."""
    token = read_secret(config.bearer_token_file, "bearer_token_file") if config.bearer_token_file else ""
    auth = config.basic_auth
    basic = (auth.username, read_secret(auth.password_file, "basic_auth.password_file")) if auth.username else None
    context = tls_context(config.tls.ca_file, config.tls.insecure_skip_verify)
    replicas = config.replica_labels
    return HttpPrometheus(config.url, timeout, token, basic_auth=basic, context=context, replica_labels=replicas)


class WatchdogCollector(Watching):
    name = "watchdog"

    def __init__(
        self,
        reflectors: Mapping[str, Mirror[Watched]],
        client: Callable[[], Prometheus],
        interval_seconds: float,
        max_queries: int,
        clock: Callable[[], float] = time.time,
        target: str = "",
        cluster: Cluster | None = None,
    ) -> None:
        self._reflectors = Reflectors(reflectors)
        self._client = client
        self._interval = interval_seconds
        self._max_queries = max_queries
        self._clock = clock
        self._target = target  # the Prometheus URL, for the log
        self._cluster = cluster  # this cluster, on a store of many
        self._lock = threading.Lock()
        self._verdicts: dict[tuple[str, str, str, str], model.Verdict] = {}
        self._errors: Counter[str] = Counter()
        self._last_run: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        super().start()
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="query-watchdog", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        super().close()
        if self._thread is not None:
            self._thread.join(5.0)

    def collect(self) -> Iterable[Family]:
        self.wait_for_first_lists()
        available = {name: r.available() for name, r in self._reflectors.items()}
        with self._lock:
            return model.families(self._verdicts, self._errors, self._last_run, available)

    def _loop(self) -> None:
        while not self._stop.is_set():
            if not self.ready():
                self._stop.wait(1.0)
                continue
            try:
                self.run_once()
            except Exception:  # a bug in one run must not end the thread: the next run may succeed
                log.exception("query watchdog run failed")
                self._count("error")
            self._stop.wait(self._interval)

    def watched(self) -> list[model.WatchedQuery]:
        """Trigger queries, and dashboards still to expand; autoscalers first."""
        return model.pages_first(q for r in self._reflectors.values() for qs in r.items().values() for q in qs)

    def _expand(
        self, evaluator: Evaluator, watched: list[model.WatchedQuery]
    ) -> list[tuple[model.WatchedQuery, Query]]:
        found: list[tuple[model.WatchedQuery, Query]] = []
        for item in watched:
            if item.dashboard is None:
                found.append((item, keda_query(item.expr)))
                continue
            try:
                found += model.expand(item, evaluator.dashboard(item.dashboard))
            except (ValueError, TypeError, AttributeError, KeyError) as exc:  # one dashboard, not the run
                log.warning(
                    "query watchdog: dashboard %s/%s %s: %s",
                    item.namespace,
                    item.name,
                    item.location,
                    exc,
                    extra={LIMIT_KEY: item.owner},
                )
        if len(found) > self._max_queries:
            log.warning("query watchdog: %d queries found, checking the first %d", len(found), self._max_queries)
        return found[: self._max_queries]

    def run_once(self) -> None:
        """One run: every watched query against Prometheus; the verdicts replace the previous ones."""
        watched = self.watched()
        try:
            prometheus = self._client()
        except PrometheusError as exc:
            log.error("query watchdog: %s", exc)
            self._count("credentials")
            return
        try:
            prometheus.query("vector(1)")  # one error for an unreachable Prometheus, not one per query
        except PrometheusError as exc:
            log.error("query watchdog: Prometheus %s: %s", self._target, exc)
            self._count(model.error_reason(exc.status, str(exc)))
            return
        evaluator = Evaluator(prometheus, cluster=self._cluster)
        verdicts: dict[tuple[str, str, str, str], model.Verdict] = {}
        for item, query in self._expand(evaluator, watched):
            outcome = evaluator.evaluate(query)
            where = f"{item.owner} {item.location}" + (f" as {self._cluster} sees it" if self._cluster else "")
            per_object = {LIMIT_KEY: item.owner}  # an old dashboard's many panels spend only its own lines
            if outcome.status == "error":
                message = "; ".join(outcome.reasons)
                self._count(model.error_reason(outcome.http_status, message, bool(outcome.partial)))
                log.warning("query watchdog: %s: cannot check %r: %s", where, query.expr, message, extra=per_object)
                if outcome.partial and item.key in self._verdicts:  # a store's outage resolves no alert
                    verdicts[item.key] = self._verdicts[item.key]
            elif outcome.status == "empty":
                reason = model.empty_reason(outcome.reasons, outcome.fix is not None)
                verdicts[item.key] = model.Verdict(True, reason, outcome.renames, outcome.fix or "")
                why = "; ".join(outcome.reasons) + (f"; fix: {outcome.fix}" if outcome.fix else "")
                log.warning("query watchdog: %s: %r returns nothing: %s", where, query.expr, why, extra=per_object)
            else:  # data, or empty where the query says it is expected (allow-empty, sparse metrics)
                verdicts[item.key] = model.Verdict(False)
        with self._lock:
            self._verdicts = verdicts
            self._last_run = self._clock()

    def _count(self, reason: str) -> None:
        with self._lock:
            self._errors[reason] += 1


def build_watchdog_collectors(config: Watchdog, kubeconfig: str | None) -> list[WatchdogCollector]:
    """The watchdog collector when the watchdog is enabled."""
    return watchdog_collectors(config, kubeconfig) if config.enabled else []


def watchdog_collectors(config: Watchdog, kubeconfig: str | None) -> list[WatchdogCollector]:
    """The watchdog collector (the `watchdog` row of the table); none without a kubeconfig."""
    try:
        api = connect(kubeconfig)
    except KubeConfigError:
        return []  # the cluster collector reports the missing configuration; one failure, said once
    return [
        WatchdogCollector(
            make_reflectors(api, config),
            lambda: prometheus_client(config.prometheus, config.timeout_seconds),
            config.interval_seconds,
            config.max_queries,
            target=config.prometheus.url,
            cluster=Cluster(config.cluster_label, config.cluster) if config.cluster else None,
        )
    ]
