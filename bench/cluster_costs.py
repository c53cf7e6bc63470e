"""The cluster role's cost per pod event and per view, in process on bench_cluster's workload, of this tree
or of another commit's `exporter` package (`--source`, put ahead of this tree's before anything is imported).

    .venv/bin/python bench/cluster_costs.py {events,view} SCALE [--source TREE]

prints one JSON line; `costs_alternating` runs it for several trees, taking turns in fresh processes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from cluster_workload import sized, workload

ROOT = Path(__file__).resolve().parents[1]
CHANGED = 2000  # bound pods whose records a view moves in the index (`view_cost`)


def _use(source: str | None) -> None:
    """This tree's `exporter`, or `source`'s ahead of it; before the first import of the package."""
    for path in (str(ROOT), source):
        if path and path not in sys.path:
            sys.path.insert(0, path)


def event_cost(scale: float, source: str | None = None, rounds: int = 3) -> dict[str, float]:
    """The work of one pod event as the reflector does it (the watch line decoded, the object reduced to
    its record), per pod of the workload; the best of `rounds` (the machine may be shared)."""
    _use(source)
    from exporter.kube import transform

    pod_objects = [o for o in workload(*sized(scale)) if o["kind"] == "Pod"]
    lines = [json.dumps({"type": "MODIFIED", "object": o}) for o in pod_objects]
    transform_s = event_s = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for obj in pod_objects:
            transform.pod_record(obj)
        transform_s = min(transform_s, time.perf_counter() - t0)
        t0 = time.perf_counter()
        for line in lines:
            transform.pod_record(json.loads(line)["object"])
        event_s = min(event_s, time.perf_counter() - t0)
    return {"transform_us": transform_s / len(pod_objects) * 1e6, "event_us": event_s / len(pod_objects) * 1e6}


def view_cost(scale: float, source: str | None = None, rounds: int = 5) -> dict[str, float]:
    """The classification's share of pod events, on the workload's records: the index of the bound pods
    (kept from the view before, `PodIndexCache`) moving `CHANGED` of them, spread over every bound pod
    (GPU and DaemonSet pods alike), to their new records, per changed pod; and the recompute of the view
    after it (its pass over the pods finds nothing more to move); best of `rounds`."""
    _use(source)
    from exporter.kube import transform
    from exporter.kube.placement import PodIndexCache
    from exporter.kube.view import compute

    objects = workload(*sized(scale))
    nodes = {o["metadata"]["name"]: transform.node_record(o) for o in objects if o["kind"] == "Node"}
    pod_objects = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"}
    pods = {k: r for k, o in pod_objects.items() if (r := transform.pod_record(o)) is not None}
    bound = [k for k, r in pods.items() if r.node]
    changed = bound[:: max(1, len(bound) // CHANGED)][:CHANGED]
    cache = PodIndexCache()
    compute(nodes, pods, index_cache=cache)  # the view before the events
    index_s = recompute_s = float("inf")
    for _ in range(rounds):
        after = dict(pods)
        for key in changed:  # a MODIFIED event of each: a new record (a bound pod always has one)
            after[key] = transform.pod_record(pod_objects[key]) or after[key]
        t0 = time.perf_counter()
        cache.index(nodes, after)
        t1 = time.perf_counter()
        view = compute(nodes, after, index_cache=cache)
        index_s, recompute_s = min(index_s, t1 - t0), min(recompute_s, time.perf_counter() - t1)
        pods = after
    per_pod = index_s / len(changed) * 1e6
    return {"index_us": per_pod, "view_ms": recompute_s * 1e3, "pending": len(view.pending), "changed": len(changed)}


def costs_alternating(kind: str, scale: float, trees: list[str | None], times: int = 3) -> list[dict[str, float]]:
    """`event_cost` (kind "events") or `view_cost` (kind "view") of each tree (None: this one), each in
    fresh processes taking turns, best of each: load from other processes hits them alike."""
    best: list[dict[str, float]] = [{} for _ in trees]
    for _ in range(times):
        for i, source in enumerate(trees):
            command = [sys.executable, __file__, kind, str(scale), *(["--source", source] if source else [])]
            out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT).stdout
            measured = json.loads(out.strip().splitlines()[-1])
            best[i] = {k: min(v, best[i].get(k, v)) for k, v in measured.items()}
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("events", "view"))
    parser.add_argument("scale", type=float, help="fraction of 5,000 nodes / 150,000 pods")
    parser.add_argument("--source", help="a folder holding another commit's exporter package")
    args = parser.parse_args()
    cost = event_cost if args.kind == "events" else view_cost
    print(json.dumps(cost(args.scale, args.source)))


if __name__ == "__main__":
    main()
