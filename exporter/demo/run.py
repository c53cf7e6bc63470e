"""`llm-exporter demo`: the Thursday-afternoon incident on one machine, without a cluster or a GPU.

Starts the real vLLM CPU server with the tiny model, the exporter in front of it, drives a burst of long
prompts, and prints TTFT p99 and queue depth live from the exporter's own `llm_*` output; then vLLM's served
/metrics renames `kv_cache_usage_perc` (a loopback proxy in front of the engine, as an upgrade would), and the
demo's Prometheus shows the dashboard's KV cache query go empty while `llm_*` keeps flowing and
`LLMMetricMissing` fires. After the burst and after the rename it runs `llm-exporter diagnose` on its own
Prometheus and prints the Markdown a person would paste into the incident channel.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from exporter import config, roles, server
from exporter.demo import live, prometheus, verdict, vllm_env
from exporter.demo.proxy import RenamingProxy

P99 = "histogram_quantile(0.99, sum by (le) (rate(llm_time_to_first_token_seconds_bucket[1m])))"
RENAME = {"vllm:kv_cache_usage_perc": "vllm:kv_cache_usage_fraction"}
KV_PANEL = "'KV cache usage'"  # the dashboard panel on the renamed series
FLOWING = "count(llm_requests_running)"
LONG_PROMPT = " ".join(["the queue is long and the model waits for the gpu"] * 20)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=48, help="requests in the burst")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--short", action="store_true", help="a small burst (CI)")
    parser.add_argument("--vllm-version", default=vllm_env.VLLM_VERSION)
    parser.add_argument(
        "--hold",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep the engine, the exporter and Prometheus up this long after the verdicts, to look at the "
        "dashboard on the incident (scripts/perses-screenshots.sh DIR --prometheus URL)",
    )


def _complete(url: str) -> None:
    data = json.dumps({"model": "tiny", "prompt": LONG_PROMPT, "max_tokens": 64, "ignore_eos": True}).encode()
    request = urllib.request.Request(url + "/v1/completions", data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        response.read()


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def _line(snap: dict[str, float], elapsed: float) -> str:
    p99 = "   n/a" if math.isnan(snap["ttft_p99"]) else f"{snap['ttft_p99']:6.2f}s"
    return (
        f"t={elapsed:5.1f}s  TTFT p99 {p99}  waiting {snap['waiting']:3.0f}  running {snap['running']:3.0f}  "
        f"engine up {snap['up']:.0f}  missing series {snap['missing']:.0f}"
    )


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # so that `finally` stops vLLM and Prometheus, as Ctrl-C does


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    step = _Steps()
    requests = 8 if args.short else args.requests
    python = vllm_env.ensure_venv(args.vllm_version, progress=step)
    model = vllm_env.ensure_model(python, progress=step)
    workdir = Path(tempfile.mkdtemp(prefix="llm-exporter-demo-"))
    step(f"starting vLLM {args.vllm_version} on the CPU (log: {workdir / 'vllm.log'}); this takes a minute or two")
    # Two sequences at a time: the tiny model is fast, and a small batch makes the queue visible.
    engine = vllm_env.start_server(
        python, model, vllm_env.free_port(), workdir / "vllm.log", extra_args=("--max-num-seqs", "2")
    )
    proxy = RenamingProxy(engine.url)  # the exporter and Prometheus scrape the engine through it
    stop = threading.Event()
    prom = None
    try:
        cfg = config.parse(
            json.dumps({"engines": {"targets": [{"url": proxy.url, "labels": {"namespace": "demo", "pod": "vllm-0"}}]},
                        "gpu": {"enabled": "false"}})
        )  # fmt: skip
        port = vllm_env.free_port()
        collectors = roles.build("node", cfg, None)
        threading.Thread(target=server.serve, args=(collectors, "node", f"127.0.0.1:{port}", stop), daemon=True).start()
        metrics_url = f"http://127.0.0.1:{port}/metrics"
        time.sleep(0.5)
        binary = prometheus.binary(step) if prometheus.available() else None
        if binary is not None:
            prom = prometheus.start(binary, f"127.0.0.1:{port}", proxy.url.removeprefix("http://"), workdir)
            step(f"Prometheus on {prom.url}, evaluating the alert rules with demo thresholds (TTFT p99 > 0.2s)")
        elif not prometheus.available():
            step("not a checkout of the repository: Prometheus and the alert rules are not run")
        alerts = _AlertWatch(prom)
        found = _wait_for_engine(metrics_url)
        step(f"the exporter found {', '.join(found) if found else 'no engine yet'}: no engine named in its config")
        step(f"exporter on {metrics_url}; sending a burst of {requests} long prompts, {args.concurrency} at a time")
        start = time.monotonic()
        with ThreadPoolExecutor(args.concurrency) as pool:
            futures = [pool.submit(_complete, engine.url) for _ in range(requests)]
            while not all(f.done() for f in futures):
                print(_line(live.snapshot(_fetch(metrics_url)), time.monotonic() - start), flush=True)
                alerts.poll()
                time.sleep(0.5)
            for f in futures:
                f.result()
        final = live.snapshot(_fetch(metrics_url))
        print(_line(final, time.monotonic() - start), flush=True)
        print(f"burst done: {requests} requests, TTFT p99 {final['ttft_p99']:.2f}s, queue drained to "
              f"{final['waiting']:.0f}")  # fmt: skip
        if prom is not None:
            step("waiting up to 20s for the alerts of the burst to fire")
            alerts.wait_for("LLMTimeToFirstTokenP99High", 20.0)
            seen = prom.query(P99)
            print(f"Prometheus: {P99} = {seen[0][1] if seen else 'no data'}", flush=True)
            verdict.paste(prom, "after the burst")
        _silent_rename(proxy, metrics_url, prom, alerts, step)
        if prom is not None:
            verdict.paste(prom, "after the rename")
            if args.hold > 0:
                step(f"holding for {args.hold:.0f}s: Prometheus on {prom.url} (Ctrl-C ends it)")
                time.sleep(args.hold)
    finally:
        if prom is not None:
            prom.stop()
        stop.set()
        proxy.close()
        engine.stop()
    return 0


def _wait_for_engine(metrics_url: str, timeout: float = 10.0) -> list[str]:
    """The engines the exporter detected from the served body (the config names none)."""
    deadline = time.monotonic() + timeout
    while True:
        found = live.engines_found(_fetch(metrics_url))
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _silent_rename(
    proxy: RenamingProxy, metrics_url: str, prom: prometheus.DemoPrometheus | None, alerts: _AlertWatch, step: _Steps
) -> None:
    kv = _kv_query() if prom is not None else ""
    if prom is not None:
        _show(prom, kv, "the dashboard's KV cache usage panel")
    ((old, new),) = RENAME.items()
    step(f"a silent rename: vLLM's /metrics now serves {old} as {new}, as an upgrade might")
    proxy.rename(RENAME)
    if prom is not None:
        step("waiting up to 30s for LLMMetricMissing")
        alerts.wait_for("LLMMetricMissing", 30.0)
        _show(prom, kv, "the dashboard's KV cache usage panel")
        _show(prom, old, "a query on vLLM's own name")
        _show(prom, FLOWING, "the other llm_* series")
    missing, unmapped = live.rename_signals(_fetch(metrics_url))
    for metric, source in missing:
        print(f'llm_metric_present{{metric="{metric}",source="{source}"}} 0  -> alert LLMMetricMissing; '
              f"{metric} is absent, not 0")  # fmt: skip
    print(f"llm_engine_unmapped_metrics {unmapped:.0f}  (a family no release exposes: a likely rename)")


def _kv_query() -> str:
    from exporter.check.inputs import file_queries

    queries = file_queries(prometheus.ROOT / "dashboards" / "overview.json")
    return next(q.expr for q in queries if KV_PANEL in q.where)


def _show(prom: prometheus.DemoPrometheus, expr: str, what: str) -> None:
    result = prom.query(expr)
    print(f"Prometheus: {what}: {expr} = {len(result)} series" if result else
          f"Prometheus: {what}: {expr} = no data", flush=True)  # fmt: skip


class _AlertWatch:
    """Prints each alert when it starts firing."""

    def __init__(self, prom: prometheus.DemoPrometheus | None) -> None:
        self.prom = prom
        self.seen: set[str] = set()

    def poll(self) -> None:
        if self.prom is None:
            return
        for alert in self.prom.firing():
            if alert not in self.seen:
                self.seen.add(alert)
                print(f"ALERT firing: {alert}", flush=True)

    def wait_for(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not any(a.startswith(name) for a in self.seen):
            self.poll()
            time.sleep(0.5)


class _Steps:
    """Numbered progress lines for the long steps."""

    def __init__(self) -> None:
        self.n = 0
        self.started = time.monotonic()

    def __call__(self, message: str) -> None:
        self.n += 1
        print(f"[{self.n}] +{time.monotonic() - self.started:5.1f}s  {message}", flush=True)
