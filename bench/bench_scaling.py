"""Cost at x1, x10, x100 of engine targets, GPUs and cluster pods, each row against a peer in the same run.

    .venv/bin/python bench/bench_scaling.py [--scales 1,10,100] [--skip-cluster] [--events 5000]

Node rows (bench_node.measure: engine-server child, exporter child with the stub NVML): x1 is one engine
target with a ~100 KB vLLM body and one GPU; x10 and x100 multiply both. The stub libnvidia-ml.so.1 holds
at most 64 GPUs (MAX_GPUS in tests/gpu/stub_nvml/stub_nvml.c), so x100 runs 64. Peer: prometheus_client
parsing the same bodies. The engine timeout is the default (engines.timeout_seconds 3); a row says how
many scrapes had every target up.

Cluster rows (bench_cluster.py as a subprocess, its own peer): x1 is 50 nodes / 1,500 pods, x10 500 /
15,000, x100 5,000 / 150,000. Its peer stops at 15,000 pods (typed models need GBs beyond), so the ratios
are per 1,000 pods. The x100 cluster row is most of the run (about 3.5 minutes on two cores).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from bench_node import measure

ROOT = Path(__file__).resolve().parents[1]
BODY_BYTES = 100_000
STUB_MAX_GPUS = 64
SCRAPES = {1: 100, 10: 40, 100: 10}  # fewer at scale: a x100 scrape takes most of a second on 2 cores
CLUSTER_SCALE = {1: 0.01, 10: 0.1, 100: 1.0}  # fractions of bench_cluster's 5,000 nodes / 150,000 pods
NUMBER = r"(\d+(?:\.\d+)?)"


def node_rows(scales: list[int], pause: float) -> None:
    print("node role: N engine targets (~100 KB vLLM body each) + N stub GPUs, sequential scrapes")
    head = f"{'scale':>5} {'targets':>7} {'GPUs':>4} {'scrapes':>7} {'all up':>7} {'p50 ms':>8} {'p99 ms':>8}"
    head += f" {'CPU ms':>8} {'RSS MB':>7} {'HWM MB':>7} {'out KB':>7} {'peer ms':>8} {'p50/peer':>8} {'CPU/peer':>8}"
    print(head)
    body_kb = 0.0
    for scale in scales:
        gpus = min(scale, STUB_MAX_GPUS)
        run = measure([BODY_BYTES] * scale, gpus, SCRAPES.get(scale, 10), pause, peer_rounds=3)
        body_kb = run.body_kb / run.targets
        print(
            f"{'x' + str(scale):>5} {run.targets:>7} {run.gpus:>4} {run.scrapes:>7} "
            f"{f'{run.complete}/{run.scrapes}':>7} {run.p50 * 1e3:8.1f} {run.p99 * 1e3:8.1f} {run.cpu * 1e3:8.1f} "
            f"{run.rss_mb:7.1f} {run.hwm_mb:7.1f} {run.exposition_kb:7.0f} {run.peer * 1e3:8.1f} "
            f"{run.p50 / run.peer:8.3f} {run.cpu / run.peer:8.3f}",
            flush=True,
        )
        if run.complete < run.scrapes:
            print(f"      some targets down: as few as {run.min_engines_up}/{run.targets} up in one scrape")
    print(f"(each body {body_kb:.0f} KiB, grown as bench_parse does; the stub caps GPUs at {STUB_MAX_GPUS})")


def cluster_figures(scale: float, events: int) -> dict[str, tuple[float, ...]]:
    """bench_cluster.py's printed figures: {row label: (ours, peer[, ratio])}; it runs in its own processes."""
    cmd = [sys.executable, str(ROOT / "bench" / "bench_cluster.py"), "--scale", str(scale), "--events", str(events)]
    cmd += ["--no-baseline", "--no-previous"]  # its rows are ours against the peer; the revisions are judged there
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT, timeout=900).stdout
    figures: dict[str, tuple[float, ...]] = {}
    last = ""
    for line in out.splitlines():
        if match := re.match(rf"nodes / pods\s+{NUMBER}/{NUMBER}\s+{NUMBER}/{NUMBER}", line):
            figures["size"] = tuple(map(float, match.groups()))
        elif match := re.match(rf"(\S.*?) \(\w+\)\s+{NUMBER}\s+{NUMBER}\s*$", line):
            last = match[1]
            figures[last] = (float(match[2]), float(match[3]))
        elif match := re.match(rf"\s+per 1,000 pods\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}x", line):
            figures[last] += (float(match[3]),)
        elif match := re.match(rf"events/s \(steady state\)\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}x", line):
            figures["events/s"] = tuple(map(float, match.groups()))
    expected = {"size", "initial sync", "memory after sync", "recompute of the view", "events/s"}
    if missing := expected - figures.keys():
        raise SystemExit(f"bench_cluster.py printed no {sorted(missing)}:\n{out}")
    return figures


def cluster_rows(scales: list[int], events: int) -> None:
    print(f"\ncluster role (bench_cluster.py, {events} MODIFIED pod events); ratios peer/ours per 1,000 pods")
    head = f"{'scale':>5} {'nodes':>6} {'pods':>7} {'peer pods':>9} {'sync s':>7} {'x':>6} {'mem MB':>7} {'x':>6}"
    head += f" {'recompute s':>11} {'x':>6} {'events/s':>8} {'x':>5}"
    print(head)
    for scale in scales:
        f = cluster_figures(CLUSTER_SCALE[scale], events)
        (nodes, pods, _, peer_pods), sync, mem = f["size"], f["initial sync"], f["memory after sync"]
        recompute, ev = f["recompute of the view"], f["events/s"]
        print(
            f"{'x' + str(scale):>5} {nodes:6.0f} {pods:7.0f} {peer_pods:9.0f} {sync[0]:7.2f} {sync[2]:5.1f}x "
            f"{mem[0]:7.1f} {mem[2]:5.1f}x {recompute[0]:11.4f} {recompute[2]:5.1f}x {ev[0]:8.0f} {ev[2]:4.1f}x",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="1,10,100", help="comma-separated multipliers among 1, 10, 100")
    parser.add_argument("--pause", type=float, default=0.12, help="seconds between node scrapes")
    parser.add_argument("--events", type=int, default=5000, help="watch events per cluster run")
    parser.add_argument("--skip-cluster", action="store_true", help="node rows only (the quick part)")
    args = parser.parse_args()
    scales = [int(s) for s in args.scales.split(",")]
    if unknown := set(scales) - CLUSTER_SCALE.keys():
        parser.error(f"--scales: unknown {sorted(unknown)} (use 1, 10, 100)")
    node_rows(scales, args.pause)
    if not args.skip_cluster:
        cluster_rows(scales, args.events)


if __name__ == "__main__":
    main()
