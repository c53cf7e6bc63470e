"""The engine collector: fetch every engine target concurrently, map, and re-export.

    llm_engine_up{namespace="demo",pod="vllm-0",engine="vllm"} 1
    llm_engine_info{namespace="demo",pod="vllm-0",engine="vllm",version="0.32.0",version_source="endpoint"} 1
    llm_metric_present{...,metric="llm_kv_cache_usage_ratio",source="vllm:kv_cache_usage_perc",version="0.32.0"} 1
    llm_requests_waiting{namespace="demo",pod="vllm-0",engine="vllm",model="tiny",dp_rank="0"} 3

A target that is down, hangs, answers 500, garbage or an oversized body degrades only its own series:
`llm_engine_up 0` and `llm_engine_scrape_error{reason}`, within the configured timeout. A target with too
many series, over-long label values or repeated series is trimmed, and says so in
`llm_engine_series_dropped{reason}`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

from exporter.catalogue import engine as m
from exporter.config import Engines
from exporter.engines import mapping, parser, registry, served
from exporter.engines.engine import Engine
from exporter.engines.targets import EngineTarget, from_static
from exporter.exposition import Family
from exporter.sources import http

log = logging.getLogger(__name__)

VERSION_TTL_SECONDS = 300.0  # a restarted engine may run a new release; re-read /version this often
MAX_WORKERS = 16


@dataclass(slots=True)
class Outcome:
    target: EngineTarget
    mapped: mapping.Mapped | None
    error: str  # "" on success, else a FetchError reason, "metrics_disabled" (HTTP 501) or "parse"
    seconds: float
    engine: str = ""  # the engine found in the body (or configured); "": the target's (registry.label_of)
    models: tuple[served.ServedModel, ...] = ()  # from /v1/models, read with the version


class EngineCollector:
    """Scrapes engine targets (static ones, and those a discovery function returns) on every collect()."""

    name = "engines"

    def __init__(
        self,
        config: Engines,
        discovered: Callable[[], Iterable[EngineTarget]] = tuple,
        observers: Sequence[Callable[[list[Outcome]], None]] = (),
    ) -> None:
        self._config = config
        self._observers = observers  # see each scrape's outcomes (the replicas' first tokens); must not raise
        self._static = [from_static(t) for t in config.targets]
        self._discovered = discovered
        self._pool = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="engine-scrape")
        self._limits = mapping.Limits(config.max_series_per_target, config.max_label_value_length)
        self._versions: dict[str, tuple[str | None, float]] = {}
        self._models: dict[str, tuple[tuple[served.ServedModel, ...], float]] = {}
        self._engines: dict[str, Engine] = {}  # metrics URL → engine detected in its body
        self._lock = threading.Lock()

    def targets(self) -> list[EngineTarget]:
        seen: dict[str, EngineTarget] = {t.metrics_url: t for t in self._static}
        for target in self._discovered():
            seen.setdefault(target.metrics_url, target)
        return list(seen.values())

    def collect(self) -> list[Family]:
        targets = self.targets()
        timeout = self._config.timeout_seconds
        # one deadline for every target, from now: a target queued behind others (more targets than workers)
        # gets the time left, not a fresh budget that would stretch the scrape past Prometheus' timeout
        deadline = time.monotonic() + timeout
        futures = {self._pool.submit(self._scrape, t, deadline): t for t in targets}
        done, _ = wait(futures, timeout=timeout + 0.25)  # each fetch keeps the deadline; this is a backstop
        outcomes = []
        for future, target in futures.items():
            if future in done and future.exception() is None:
                outcomes.append(future.result())
            else:
                future.cancel()  # not started yet: never let it run into the next scrape
                reason = "timeout" if future not in done else "internal"
                outcomes.append(Outcome(target, None, reason, timeout, self._known(target)))
        for observe in self._observers:
            observe(outcomes)
        return build_families(outcomes)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def start(self) -> None:
        pass

    def _scrape(self, target: EngineTarget, deadline: float) -> Outcome:
        start = time.monotonic()
        if deadline - start < 0.05:
            # queued past the deadline: no time left to fetch
            return Outcome(target, None, "timeout", 0.0, self._known(target))
        raw = b""
        engine = registry.ENGINES.get(target.engine) or self._engines.get(target.metrics_url)
        # the label of a failed scrape: the engine configured or identified, else none ("unknown"), not a guess
        name = engine.name if engine else ""
        try:
            auth = self._auth(target)
            answered, raw = self._fetch(target, engine, deadline, auth)
            body = raw.decode("utf-8", errors="replace")
            if engine is None:
                # no hint: the body says which engine it is (else the engine whose own path answered, when the
                # names don't); a body no engine's prefix marks is read as the registry's fallback engine's, and
                # labelled so once it maps (its series carry that name), but not when it fails to parse
                found = registry.detect(body) or answered
                engine = found or registry.get(registry.FALLBACK)
                if found is not None:
                    with self._lock:
                        self._engines[target.metrics_url] = found
                    name = found.name
            version = self._version(target, engine, deadline, auth)
            identity = {**target.identity, "engine": engine.name}
            mapped = mapping.map_body(body, identity, version, engine.releases(), self._limits, engine=engine)
            models = self._served(target, engine, deadline, auth)
        except http.FetchError as exc:
            self._forget_version(target)
            log.debug("engine %s: %s", target.metrics_url, exc)
            # an engine started without its metrics may say so by a status (llama.cpp: 501): not a bare status
            reason = "metrics_disabled" if exc.detail in registry.METRICS_DISABLED else exc.reason
            return Outcome(target, None, reason, time.monotonic() - start, name)
        except parser.ParseError as exc:
            # the kind of fault only: a misconfigured target could serve anything, and bodies are never logged
            log.debug("engine %s: unparsable body (%s, %d bytes)", target.metrics_url, str(exc).split(":")[0], len(raw))
            return Outcome(target, None, "parse", time.monotonic() - start, name)
        return Outcome(target, mapped, "", time.monotonic() - start, engine.name, models)

    def _known(self, target: EngineTarget) -> str:
        """The engine configured for the target or identified in an earlier body; "" when neither."""
        if target.engine in registry.ENGINES:
            return target.engine
        with self._lock:
            found = self._engines.get(target.metrics_url)
        return found.name if found else ""

    @staticmethod
    def _auth(target: EngineTarget) -> tuple[str, str] | None:
        """The target's basic-auth (username, password); a password file is read now, at every scrape."""
        credentials = target.auth
        if credentials is None:
            return None
        if credentials.password_file:
            return credentials.username, http.read_secret(credentials.password_file, "basic_auth.password_file")
        return credentials.username, credentials.password

    def _fetch(
        self, target: EngineTarget, engine: Engine | None, deadline: float, auth: tuple[str, str] | None
    ) -> tuple[Engine | None, bytes]:
        """(the engine whose own metrics path answered, if that told it; the body) of the target's Prometheus text.
        A known engine is read at its `metrics_path`; an unidentified target whose `/metrics` answers JSON is
        read at the path of an engine whose `/metrics` is JSON (trtllm-serve's `/prometheus/metrics`)."""
        limit = self._config.max_response_bytes
        default = target.base_url + "/metrics"
        url = target.metrics_url
        if engine is not None and url == default:
            url = target.base_url + engine.metrics_path
        raw = http.get(url, timeout=max(0.05, deadline - time.monotonic()), max_bytes=limit, auth=auth)
        json_engine = next(iter(registry.JSON_AT_METRICS), None)
        if engine is None and json_engine is not None and url == default and raw.lstrip()[:1] in (b"[", b"{"):
            url = target.base_url + json_engine.metrics_path
            raw = http.get(url, timeout=max(0.05, deadline - time.monotonic()), max_bytes=limit, auth=auth)
            return json_engine, raw
        return None, raw

    def _version(
        self, target: EngineTarget, engine: Engine, deadline: float, auth: tuple[str, str] | None
    ) -> str | None:
        if engine.version_path is None:
            return None  # no version endpoint (LMDeploy): the release is inferred from the names
        now = time.monotonic()
        with self._lock:
            cached = self._versions.get(target.metrics_url)
        if cached and now - cached[1] < VERSION_TTL_SECONDS:
            return cached[0]
        version: str | None = None
        try:
            # /version gets at most half the budget: the metrics matter more than their label
            url = target.base_url + engine.version_path
            raw = http.get(url, timeout=max(0.05, (deadline - now) / 2), max_bytes=1 << 16, accept="*/*", auth=auth)
            answer = json.loads(raw)
            version = engine.version_in(answer)
            if engine.served_in_version is not None:
                with self._lock:
                    self._models[target.metrics_url] = (engine.served_in_version(answer), now)
        except (http.FetchError, ValueError, AttributeError):
            version = None  # older servers have no /version: the release is inferred from the names
        with self._lock:
            self._versions[target.metrics_url] = (version, now)
        return version

    def _served(
        self, target: EngineTarget, engine: Engine, deadline: float, auth: tuple[str, str] | None
    ) -> tuple[served.ServedModel, ...]:
        """The models the engine serves (context limit, checkpoint), re-read as often as the version: both
        change only when the engine restarts. () when it has no such endpoint or does not answer one."""
        if engine.models_path is None:
            with self._lock:  # read with the version (llama.cpp's /props), if at all
                return self._models.get(target.metrics_url, ((), 0.0))[0]
        now = time.monotonic()
        with self._lock:
            cached = self._models.get(target.metrics_url)
        if cached and now - cached[1] < VERSION_TTL_SECONDS:
            return cached[0]
        try:
            # at most half the time left, like the version: the metrics matter more
            url = target.base_url + engine.models_path
            raw = http.get(url, timeout=max(0.05, (deadline - now) / 2), max_bytes=1 << 20, accept="*/*", auth=auth)
            models = served.parse_models(raw)
        except http.FetchError:
            models = ()
        with self._lock:
            self._models[target.metrics_url] = (models, now)
        return models

    def _forget_version(self, target: EngineTarget) -> None:
        with self._lock:
            self._versions.pop(target.metrics_url, None)
            self._models.pop(target.metrics_url, None)


def build_families(outcomes: Iterable[Outcome]) -> list[Family]:
    """The engine families of one scrape (pure: tested with exact exposition text)."""
    canonical = {spec: Family(spec) for spec in m.MAPPED}
    up, info, present = Family(m.ENGINE_UP), Family(m.ENGINE_INFO), Family(m.METRIC_PRESENT)
    unmapped, duration, error = Family(m.UNMAPPED_METRICS), Family(m.SCRAPE_DURATION), Family(m.SCRAPE_ERROR)
    dropped = Family(m.SERIES_DROPPED)
    context, model_info = Family(m.MAX_CONTEXT_TOKENS), Family(m.MODEL_INFO)
    for outcome in sorted(outcomes, key=lambda o: (o.target.namespace, o.target.pod, o.target.metrics_url)):
        t = outcome.target
        source = (t.namespace, t.pod, outcome.engine or registry.label_of(t.engine))
        up.add(source, 0.0 if outcome.mapped is None else 1.0)
        duration.add(source, outcome.seconds)
        if outcome.mapped is None:
            error.add((*source, outcome.error), 1.0)
            continue
        result = outcome.mapped
        info.add((*source, result.version, result.version_source), 1.0)
        unmapped.add(source, float(result.unmapped))
        for reason, count in result.dropped.items():
            dropped.add((*source, reason), float(count))
        for spec, (source_name, found) in result.present.items():
            present.add((*source, spec.name, source_name, result.version), 1.0 if found else 0.0)
        for spec, samples in result.samples.items():
            canonical[spec].samples.extend(samples)
        for model in outcome.models:
            if model.root:  # llama.cpp says no checkpoint by name
                model_info.add((*source, model.model, model.root), 1.0)
            if model.max_context_tokens is not None:
                context.add((*source, model.model), float(model.max_context_tokens))
    return [*canonical.values(), up, info, present, unmapped, duration, error, dropped, context, model_info]
