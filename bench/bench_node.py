"""The node role end to end, as in production: `python -m exporter serve --role node` in its own process.

    .venv/bin/python bench/bench_node.py [--scrapes 200] [--pause 0.12]

An engine-server child serves 8 vLLM bodies of 50-200 KB (the recorded 0.32.0 body grown with more model
names, as a LoRA server exposes; /version too) on loopback. The exporter loads the stub libnvidia-ml.so.1
(tests/gpu/stub_nvml, 8 GPUs) through LD_LIBRARY_PATH; its pod-resources socket does not exist (a node without
the kubelet mount). Every scrape must show all engines and GPUs up. Peer, in the same run: prometheus_client's
parser consuming the same bodies. Targets: scrape p50 and exporter CPU per scrape < 0.5 x peer, RSS < 80 MB.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from subprocess import PIPE
from threading import Thread
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SIZES_KB = (50, 70, 90, 110, 130, 150, 175, 200)  # one engine target each
GPUS = 8
RATIO_TARGET, RSS_TARGET_MB = 0.5, 80.0
ENGINE_UP = re.compile(r'^llm_engine_up\{[^}]*\bpod="([^"]*)"[^}]*\} (\S+)$', re.M)
GPU_UP = re.compile(r"^llm_gpu_up\{[^}]*\} (\S+)$", re.M)
COLLECTOR = re.compile(r'^llm_exporter_collector_(success|unavailable)\{collector="([^"]*)"\} (\S+)$', re.M)
DROPPED = re.compile(r"^llm_engine_series_dropped\{[^}]*\} (\S+)$", re.M)

from bench_parse import grown  # noqa: E402 - the parse benchmark's grown bodies
from timing import timings  # noqa: E402

from tests.gpu import stub_nvml_build  # noqa: E402 - the stub NVML of the GPU tests


@dataclass
class NodeRun:
    targets: int
    gpus: int
    scrapes: int
    p50: float  # seconds, client wall time of one GET /metrics
    p99: float
    cpu: float  # exporter CPU seconds (user + system) per scrape
    rss_mb: float
    hwm_mb: float
    body_kb: float  # total engine bodies per scrape
    exposition_kb: float
    peer: float  # seconds for prometheus_client to parse all the bodies once
    complete: int  # scrapes with every engine target and every GPU up
    min_engines_up: int
    log_tail: str  # the exporter's own log lines (INFO and up)
    collectors: str  # collector success / unavailable, and series dropped, in the last scrape


class EngineServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, payload: bytes) -> None:
        self.routes = {
            "/metrics": (payload, "text/plain; version=0.0.4"),
            "/version": (json.dumps({"version": "0.32.0"}).encode(), "application/json"),
        }
        super().__init__(("127.0.0.1", 0), EngineHandler)


class EngineHandler(BaseHTTPRequestHandler):
    server: EngineServer

    def do_GET(self) -> None:
        route = self.server.routes.get(self.path.split("?", 1)[0])
        data, kind = route or (b"not found\n", "text/plain")
        self.send_response(200 if route else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve_engines(sizes: Sequence[int]) -> None:
    """Serve one engine per size on loopback; print the ports as JSON; run until stdin closes."""
    cache: dict[int, bytes] = {}
    ports = []
    for size in sizes:
        server = EngineServer(cache.setdefault(size, grown(size).encode()))
        Thread(target=server.serve_forever, daemon=True).start()
        ports.append(server.server_address[1])
    print(json.dumps(ports), flush=True)
    sys.stdin.read()  # the parent closes stdin (or kills the group) to stop us


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[str]) -> None:
    """End `proc` and its process group (started with start_new_session), politely first."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(10)
            return


def proc_stats(pid: int) -> tuple[float, float, float]:
    """(CPU seconds user + system, VmRSS MB, VmHWM MB) of process `pid`, threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14, 15
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return cpu, int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: with few samples, p99 is the slowest scrape, not an interpolation."""
    return sorted(values)[max(0, math.ceil(q * len(values)) - 1)]


def check(body: str, pods: set[str], gpus: int) -> tuple[bool, int]:
    """(every target and GPU up, number of engine targets up) of one scrape body."""
    up = {pod for pod, value in ENGINE_UP.findall(body) if float(value) == 1.0}
    gpus_up = sum(float(v) == 1.0 for v in GPU_UP.findall(body))
    return up == pods and gpus_up == gpus, len(up & pods)


def peer_parse(bodies: Sequence[str], rounds: int) -> float:
    """Median seconds for prometheus_client to parse every body once, consuming every sample."""
    from prometheus_client.parser import text_string_to_metric_families

    def parse_all() -> None:
        deque((s for b in bodies for f in text_string_to_metric_families(b) for s in f.samples), maxlen=0)

    return statistics.median(timings(parse_all, rounds))


@contextmanager
def started(cmd: list[str], **kw: Any) -> Iterator[subprocess.Popen[str]]:
    """A child in its own session (so its whole group can be ended), stopped however the block exits."""
    proc = subprocess.Popen(cmd, text=True, start_new_session=True, cwd=ROOT, **kw)
    try:
        yield proc
    finally:
        stop(proc)


def wait_ready(port: int, proc: subprocess.Popen[str], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the exporter exited with {proc.returncode}:\n{log.read_text()}")
        with suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        time.sleep(0.1)
    raise SystemExit(f"the exporter was not ready within {timeout:.0f}s:\n{log.read_text()}")


def scrape_loop(port: int, pid: int, pods: set[str], gpus: int, scrapes: int, pause: float) -> dict[str, Any]:
    """Scrape sequentially over one keep-alive connection, as Prometheus does; check every body untimed."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def scrape() -> str:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        text = response.read().decode()
        if response.status != 200:
            raise SystemExit(f"/metrics answered {response.status}")
        return text

    for _ in range(3):  # warm up: first GPM samples, /version cached, label caches filled
        scrape()
        time.sleep(pause)
    walls, complete, min_up, text = [], 0, len(pods), ""
    cpu0, _, _ = proc_stats(pid)
    for _ in range(scrapes):
        start = time.perf_counter()
        text = scrape()
        walls.append(time.perf_counter() - start)
        ok, up = check(text, pods, gpus)
        complete, min_up = complete + ok, min(min_up, up)
        time.sleep(pause)  # idle CPU (pod-resources poll, GC) is counted too, as in production
    cpu1, rss, hwm = proc_stats(pid)
    conn.close()
    state: dict[str, dict[str, str]] = {}
    for kind, name, value in COLLECTOR.findall(text):
        state.setdefault(name, {})[kind] = value
    collectors = " ".join(
        f"{n}={v.get('success')}{' (unavailable)' * (v.get('unavailable') == '1')}" for n, v in state.items()
    )
    collectors += f"; series dropped: {sum(float(v) for v in DROPPED.findall(text)):.0f}"
    return {
        "p50": statistics.median(walls),
        "p99": percentile(walls, 0.99),
        "cpu": (cpu1 - cpu0) / scrapes,
        "rss_mb": rss,
        "hwm_mb": hwm,
        "exposition_kb": len(text) / 1024,
        "complete": complete,
        "min_engines_up": min_up,
        "collectors": collectors,
    }


def measure(sizes: Sequence[int], gpus: int, scrapes: int, pause: float, peer_rounds: int = 5) -> NodeRun:
    """Run engines + exporter, scrape `scrapes` times; every child process is gone when this returns."""
    bodies = {size: grown(size) for size in set(sizes)}
    with tempfile.TemporaryDirectory(prefix="bench-node-") as tmp_name:
        tmp = Path(tmp_name)
        libs = stub_nvml_build.build(tmp)
        engine_cmd = [sys.executable, __file__, "--serve-engines", ",".join(map(str, sizes))]
        with started(engine_cmd, stdin=PIPE, stdout=PIPE, stderr=subprocess.DEVNULL) as engines:
            assert engines.stdout is not None
            ports = json.loads(engines.stdout.readline() or "null") or []
            if len(ports) != len(sizes):
                raise SystemExit("the engine server did not start")
            pods = {f"vllm-{i}" for i in range(len(ports))}
            targets = [
                {"url": f"http://127.0.0.1:{p}", "labels": {"namespace": "bench", "pod": f"vllm-{i}"}}
                for i, p in enumerate(ports)
            ]
            gpu = {"enabled": "true", "pod_resources_socket": str(tmp / "no-kubelet" / "kubelet.sock")}
            config = tmp / "config.yaml"
            config.write_text(json.dumps({"engines": {"targets": targets}, "gpu": gpu}))  # JSON is YAML
            port, log = free_port(), tmp / "exporter.log"
            env = stub_nvml_build.env_for(libs["full"], gpus=str(gpus))
            cmd = [sys.executable, "-m", "exporter", "serve", "--config", str(config)]
            cmd += ["--listen", f"127.0.0.1:{port}", "--role", "node"]
            with log.open("w") as out, started(cmd, stdout=out, stderr=subprocess.STDOUT, env=env) as exporter:
                wait_ready(port, exporter, log)
                figures = scrape_loop(port, exporter.pid, pods, gpus, scrapes, pause)
            log_tail = "\n".join(log.read_text().splitlines()[-8:])
    return NodeRun(
        targets=len(sizes),
        gpus=gpus,
        scrapes=scrapes,
        body_kb=sum(len(bodies[s]) for s in sizes) / 1024,
        peer=peer_parse([bodies[s] for s in sizes], peer_rounds),
        log_tail=log_tail,
        **figures,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--pause", type=float, default=0.12, help="seconds between scrapes (GPM needs > 0.1)")
    parser.add_argument("--serve-engines", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks: children, temp dir
    if args.serve_engines:
        serve_engines([int(s) for s in args.serve_engines.split(",")])
        return
    run = measure([kb * 1000 for kb in SIZES_KB], GPUS, args.scrapes, args.pause)
    print(f"exporter log (last lines):\n{run.log_tail}\n")
    print(
        f"node role: {run.targets} engine targets ({run.body_kb:.0f} KB of bodies), {run.gpus} stub GPUs, "
        f"{run.scrapes} scrapes, exposition {run.exposition_kb:.0f} KB"
    )
    print(f"collector success: {run.collectors}")
    print(f"{'scrape p50 / p99 (ms)':34}{run.p50 * 1e3:10.2f} / {run.p99 * 1e3:.2f}")
    print(f"{'exporter CPU per scrape (ms)':34}{run.cpu * 1e3:10.2f}")
    print(f"{'exporter VmRSS / VmHWM (MB)':34}{run.rss_mb:10.1f} / {run.hwm_mb:.1f}")
    print(f"{'peer: prometheus_client parse (ms)':34}{run.peer * 1e3:10.2f}   (the same {run.targets} bodies)")
    p50_ratio, cpu_ratio = run.p50 / run.peer, run.cpu / run.peer
    verdicts = [
        ("scrapes with every engine and GPU up", run.complete == run.scrapes, f"{run.complete}/{run.scrapes}"),
        (f"scrape p50 / peer parse < {RATIO_TARGET}", p50_ratio < RATIO_TARGET, f"{p50_ratio:.2f}"),
        (f"CPU per scrape / peer parse < {RATIO_TARGET}", cpu_ratio < RATIO_TARGET, f"{cpu_ratio:.2f}"),
        (f"VmRSS < {RSS_TARGET_MB:.0f} MB", run.rss_mb < RSS_TARGET_MB, f"{run.rss_mb:.1f} MB"),
    ]
    for label, ok, value in verdicts:
        print(f"{label:50}{value:>12}  {'PASS' if ok else 'FAIL'}")
    if not all(ok for _, ok, _ in verdicts):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
