"""Cluster role at scale: 5,000 nodes / 150,000 pods through the real `kubernetes` client.

    .venv/bin/python bench/bench_cluster.py [--scale 1.0] [--events 20000] [--peer-scale S]
                                            [--baseline REV | --no-baseline] [--previous REV | --no-previous]
                                            [--no-peer]

The fake API server (tests/fakes/kube_api.py) runs in its own process and serves real-shaped objects.
Each client runs in a fresh process, so its memory is its own:

- ours: `exporter.sources.kube_reflector.Reflector` for nodes and pods (raw JSON, compact records);
- peer: the same paginated lists through the client's default deserialisation (typed models, kept in a
  dict as an informer would), and a `watch.Watch().stream` for the events;
- baseline: ours as of commit `--baseline` (default `BASELINE`, the cluster role before the scheduler's
  pre-resource filters), its `exporter` package taken from git into a temporary folder, on the same
  workload in the same run;
- previous: the classification before this one (`--previous`, default `PREVIOUS`: before the GPU pods'
  cpu and memory counted as moving with them), taken from git the same way.

Printed: initial sync time and memory (RSS growth after the sync), steady-state events/s, the cost of
the recompute of the cluster view after the events (as the collector does it: the index of the bound pods
kept from the view before, where the code has one; the peer recomputes from its models) and, against the
baseline, the cost per pod event (the watch line decoded and the object reduced to its record, measured
again with the two trees taking turns in fresh processes, best of three each) and of a recompute of the
view, with the ratio new / baseline. Against the previous classification (bench/cluster_costs.py, in
process on the workload's records, the trees taking turns the same way): a pod event together with the
index's move of the pod to its new record (`CHANGED` bound pods spread over them all; the index's pass
over every pod is shared among them), and the recompute of the view after them, with the ratio new /
previous. Target for the cost per pod event: within 10 % of each. Every vLLM pod requests GPUs, so every pod is
kept: the worst case for memory (plus one cpu-only DaemonSet pod per node, which the filters need); half
the workloads have required pod anti-affinity on the hostname and a third a zone spread constraint.
Target: ours well under 500 MB at scale 1.0. Each target prints PASS or FAIL; a FAIL exits 1.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import multiprocessing as mp
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cluster_costs import costs_alternating, event_cost
from cluster_workload import PODS, sized, workload

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGE = 500
BASELINE = "d737830"  # the cluster role before the pre-resource filters and per-class DRA counting
PREVIOUS = "a743a89"  # the classification before GPU pods' cpu and memory counted as moving with them
TARGET_RATIO = 1.10


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def serve(conn: Any, nodes: int, pods: int) -> None:
    """The fake API server's process: populate, report the port, then apply event bursts on request."""
    from tests.fakes.kube_api import FakeKubeAPI

    api = FakeKubeAPI(bookmark_interval=5.0)
    objects = workload(nodes, pods)
    for obj in objects:
        api.apply(obj)
    api.start()
    conn.send(api.port)
    bound = [o for o in objects if o["kind"] == "Pod" and "containerStatuses" in o["status"]]  # the running vLLM pods
    while (message := conn.recv()) != "stop":
        count = int(message)
        for k in range(count):  # restarts counted in status: MODIFIED events that change nothing we keep
            pod = bound[k % len(bound)]
            status = {
                **pod["status"],
                "containerStatuses": [{**pod["status"]["containerStatuses"][0], "restartCount": k}],
            }
            pod = {**pod, "metadata": dict(pod["metadata"]), "status": status}
            bound[k % len(bound)] = pod
            api.apply(pod)
        conn.send("done")
    api.stop()


# -- the clients (each in a fresh process) --------------------------------------------------------------
def client_ours(kubeconfig: str, events: int, scale: float = 1.0, source: str | None = None) -> dict[str, float]:
    if source:  # the baseline: another commit's exporter package, ahead of this tree's
        sys.path.insert(0, source)
    from exporter.kube import transform
    from exporter.kube.view import compute
    from exporter.sources.kube_connect import connect
    from exporter.sources.kube_reflector import Reflector

    seen = [0]
    done = threading.Event()

    def on_event() -> None:
        seen[0] += 1
        if seen[0] >= events:
            done.set()

    api = connect(kubeconfig)
    gc.collect()
    base = rss_mb()
    start = time.perf_counter()
    nodes = Reflector(api, "nodes", transform=transform.node_record, page_size=PAGE)
    pods = Reflector(api, "pods", transform=transform.pod_record, page_size=PAGE, on_event=on_event)
    nodes.start()
    pods.start()
    nodes.wait_synced(600)
    pods.wait_synced(600)
    sync = time.perf_counter() - start
    gc.collect()
    memory = rss_mb() - base
    result = {"sync_s": sync, "memory_mb": memory, "pods": len(pods.items())}
    # as the collector does: one index of the bound pods kept from view to view, where the code has one
    options: dict[str, Any] = {}
    if "index_cache" in inspect.signature(compute).parameters:
        from exporter.kube.placement import PodIndexCache

        options["index_cache"] = PodIndexCache()
    compute(nodes.items(), pods.items(), **options)  # the view of the scrape before the events
    seen[0] = 0
    print("SYNCED", flush=True)
    sys.stdin.readline()  # the server is producing events now
    t0 = time.perf_counter()
    done.wait(600)
    result["events_per_s"] = events / (time.perf_counter() - t0)
    node_items, pod_items = nodes.items(), pods.items()
    t0 = time.perf_counter()  # the view of the next scrape, after the events
    view = compute(node_items, pod_items, **options)
    result["recompute_s"] = time.perf_counter() - t0
    result["pending"] = len(view.pending)
    result.update(event_cost(scale, source))
    del node_items, pod_items
    nodes.stop()
    pods.stop()
    return result


def client_peer(kubeconfig: str, events: int) -> dict[str, float]:
    from kubernetes import client, watch
    from kubernetes import config as kube_config

    from exporter.kube import transform
    from exporter.kube.view import compute

    config: Any = kube_config  # untyped loaders
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    api_client: Any = client.ApiClient(configuration)
    core: Any = client.CoreV1Api(api_client)
    gc.collect()
    base = rss_mb()
    start = time.perf_counter()
    store: dict[str, dict[str, Any]] = {"nodes": {}, "pods": {}}
    rv: Any = ""
    for kind, lister in (("nodes", core.list_node), ("pods", core.list_pod_for_all_namespaces)):
        token = None
        while True:
            page = lister(limit=PAGE, _continue=token) if token else lister(limit=PAGE)
            for item in page.items:
                key = (
                    f"{item.metadata.namespace}/{item.metadata.name}" if item.metadata.namespace else item.metadata.name
                )
                store[kind][key] = item
            token = page.metadata._continue
            if not token:
                break
        rv = page.metadata.resource_version
    sync = time.perf_counter() - start
    gc.collect()
    result = {"sync_s": sync, "memory_mb": rss_mb() - base, "pods": len(store["pods"])}
    print("SYNCED", flush=True)
    sys.stdin.readline()
    seen = 0
    t0 = time.perf_counter()
    w: Any = watch.Watch()  # type: ignore[no-untyped-call]
    for event in w.stream(core.list_pod_for_all_namespaces, resource_version=rv, allow_watch_bookmarks=True):
        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
            obj = event["object"]
            store["pods"][f"{obj.metadata.namespace}/{obj.metadata.name}"] = obj
            seen += 1
            if seen >= events:
                break
    result["events_per_s"] = events / (time.perf_counter() - t0)
    w.stop()
    t0 = time.perf_counter()  # the same view, recomputed from the models it holds
    node_records = {
        k: transform.node_record(api_client.sanitize_for_serialization(v)) for k, v in store["nodes"].items()
    }
    pod_records = {}
    for k, v in store["pods"].items():
        record = transform.pod_record(api_client.sanitize_for_serialization(v))
        if record is not None:
            pod_records[k] = record
    view = compute(node_records, pod_records)
    result["recompute_s"] = time.perf_counter() - t0
    result["pending"] = len(view.pending)
    return result


def run_client(
    mode: str, kubeconfig: str, events: int, server: Any, scale: float, source: str | None = None
) -> dict[str, float]:
    command = [sys.executable, __file__, "--client", mode, "--kubeconfig", kubeconfig, "--events", str(events)]
    command += ["--scale", str(scale), *(["--source", source] if source else [])]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "SYNCED", f"{mode} client failed to sync"
    proc.stdin.write("go\n")
    proc.stdin.flush()
    server.send(str(events))
    server.recv()
    out, _ = proc.communicate(timeout=900)
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 5,000 nodes / 150,000 pods")
    parser.add_argument(
        "--peer-scale",
        type=float,
        default=0.1,
        help="scale for the peer (default 0.1: its typed models need tens of KB per pod, GBs at full scale)",
    )
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--baseline", default=BASELINE, help=f"commit to compare ours with (default {BASELINE})")
    parser.add_argument("--no-baseline", action="store_true", help="skip the same-run baseline")
    parser.add_argument(
        "--previous",
        default=PREVIOUS,
        help=f"the classification to compare a pod event and the view with (default {PREVIOUS})",
    )
    parser.add_argument("--no-previous", action="store_true", help="skip the same-run previous classification")
    parser.add_argument("--no-peer", action="store_true", help="skip the kubernetes-client peer")
    parser.add_argument("--client", choices=("ours", "peer"), help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        if args.client == "ours":
            print(json.dumps(client_ours(args.kubeconfig, args.events, args.scale, args.source)))
        else:
            print(json.dumps(client_peer(args.kubeconfig, args.events)))
        return
    with (
        tempfile.TemporaryDirectory(prefix="bench-cluster-baseline-") as baseline_tree,
        tempfile.TemporaryDirectory(prefix="bench-cluster-previous-") as previous_tree,
    ):
        for wanted, rev, tree in (
            (not args.no_baseline, args.baseline, baseline_tree),
            (not args.no_previous, args.previous, previous_tree),
        ):
            if wanted:
                command = ["git", "-C", str(ROOT), "archive", rev, "exporter"]
                archive = subprocess.run(command, check=False, capture_output=True)
                if archive.returncode:
                    parser.error(f"{rev}: not a commit of this repository with an exporter package")
                subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        results = run_all(args, None if args.no_baseline else baseline_tree)
        if not args.no_baseline:  # the per-event cost again, the two trees taking turns
            new, old = costs_alternating("events", args.scale, [None, baseline_tree])
            results["ours"].update(new)
            results["baseline"].update(old)
        if not args.no_previous:  # the classification's share, against the one before it
            trees: list[str | None] = [None, previous_tree]
            events = costs_alternating("events", args.scale, trees)
            views = costs_alternating("view", args.scale, trees)
            results["new"], results["previous"] = ({**e, **v} for e, v in zip(events, views, strict=True))
    if "peer" in results:
        report(results["ours"], results["peer"], args.events)
    passed = report_memory(results["ours"])  # each target prints PASS or FAIL; a FAIL exits 1, as elsewhere
    if "baseline" in results:
        passed &= report_baseline(results["ours"], results["baseline"], args.baseline)
    if "previous" in results:
        passed &= report_previous(results["new"], results["previous"], args.previous)
    if not passed:
        sys.exit(1)


def run_all(args: argparse.Namespace, baseline_tree: str | None) -> dict[str, dict[str, float]]:
    runs: list[tuple[str, str, float, str | None]] = [("ours", "ours", args.scale, None)]
    if baseline_tree:
        runs.append(("baseline", "ours", args.scale, baseline_tree))
    if not args.no_peer:
        runs.append(("peer", "peer", min(args.peer_scale, args.scale), None))
    results = {}
    for label, mode, scale, source in runs:
        nodes, pods = sized(scale)
        parent, child = mp.Pipe()
        server = mp.Process(target=serve, args=(child, nodes, pods), daemon=True)
        server.start()
        port = parent.recv()
        kubeconfig = Path(f"/tmp/bench-cluster-{port}.kubeconfig")
        from tests.fakes.kube_api import FakeKubeAPI

        fake = FakeKubeAPI(port=port)
        fake.write_kubeconfig(kubeconfig)
        results[label] = {**run_client(mode, str(kubeconfig), args.events, parent, scale, source), "nodes": nodes}
        parent.send("stop")
        server.join(30)
        kubeconfig.unlink()
    return results


def report_baseline(ours: dict[str, float], baseline: dict[str, float], rev: str) -> bool:
    """The cost per pod event, this tree against the baseline commit, on the same workload and machine."""
    print(f"\ncost per pod event against {rev} (same workload, same run): ratio new / baseline")
    print(f"{'':34}{'new':>12}{'baseline':>12}{'ratio':>10}")
    rows = [
        ("pod event: decode + record (us)", ours["event_us"], baseline["event_us"]),
        ("  of which the record (us)", ours["transform_us"], baseline["transform_us"]),
        ("recompute of the view (ms)", ours["recompute_s"] * 1e3, baseline["recompute_s"] * 1e3),
        ("memory after sync (MB)", ours["memory_mb"], baseline["memory_mb"]),
    ]
    for label, new, old in rows:
        print(f"{label:34}{new:>12.3f}{old:>12.3f}{new / old:>9.2f}x")
    per_event = ours["event_us"] / baseline["event_us"]
    verdict = "PASS" if per_event <= TARGET_RATIO else "FAIL"
    print(f"cost per pod event: {per_event:.2f}x the baseline: {verdict} (target <= {TARGET_RATIO:.2f}x)")
    print("(the recompute runs once per scrape after changes, not per event; it grows with the pending pods)")
    print(f"pending GPU pods found: new {ours['pending']:.0f}, baseline {baseline['pending']:.0f}")
    return per_event <= TARGET_RATIO


def report_previous(new: dict[str, float], previous: dict[str, float], rev: str) -> bool:
    """A pod event with the index's move of the pod, and the recompute of the view, this tree against the
    classification before it (`rev`), on the same workload and machine."""
    print(f"\nthe classification against {rev}, the one before it (same workload, same run): ratio new / previous")
    print(f"{'':44}{'new':>12}{'previous':>12}{'ratio':>10}")
    per_event = {k: v["event_us"] + v["index_us"] for k, v in (("new", new), ("previous", previous))}
    rows = [
        ("pod event: decode + record (us)", new["event_us"], previous["event_us"]),
        ("  + the index's move of the pod (us)", new["index_us"], previous["index_us"]),
        ("pod event, all of it (us)", per_event["new"], per_event["previous"]),
        ("recompute of the view after them (ms)", new["view_ms"], previous["view_ms"]),
    ]
    for label, a, b in rows:
        print(f"{label:44}{a:>12.3f}{b:>12.3f}{a / b:>9.2f}x")
    ratio = per_event["new"] / per_event["previous"]
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(f"cost per pod event: {ratio:.2f}x the previous classification: {verdict} (target <= {TARGET_RATIO:.2f}x)")
    print(f"({new['changed']:.0f} bound pods changed; the recompute runs once per scrape after changes, not per event)")
    print(f"pending GPU pods found: new {new['pending']:.0f}, previous {previous['pending']:.0f}")
    return ratio <= TARGET_RATIO


def report(ours: dict[str, float], peer: dict[str, float], events: int) -> None:
    print(
        f"workload: every vLLM pod requests GPUs, one cpu-only DaemonSet pod per node; {events} MODIFIED pod "
        f"events; pending GPU pods found: "
        f"ours {ours['pending']:.0f}, peer {peer['pending']:.0f}"
    )
    print(f"{'':30}{'ours':>14}{'peer':>14}{'ratio':>10}")
    print(f"{'nodes / pods':30}{ours['nodes']:>7.0f}/{ours['pods']:<6.0f}{peer['nodes']:>7.0f}/{peer['pods']:<6.0f}")
    for label, key, unit in (
        ("initial sync", "sync_s", "s"),
        ("memory after sync", "memory_mb", "MB"),
        ("recompute of the view", "recompute_s", "s"),
    ):
        a, b = ours[key], peer[key]
        pa, pb = a / ours["pods"] * 1000, b / peer["pods"] * 1000  # per 1,000 pods: scales may differ
        print(f"{label + ' (' + unit + ')':30}{a:>14.3f}{b:>14.3f}")
        print(f"{'  per 1,000 pods':30}{pa:>14.4f}{pb:>14.4f}{pb / pa:>9.1f}x")
    a, b = ours["events_per_s"], peer["events_per_s"]
    print(f"{'events/s (steady state)':30}{a:>14.0f}{b:>14.0f}{a / b:>9.1f}x")
    print("(events/s of ours is bounded by the fake server producing them on the same cores: a lower bound)")


def report_memory(ours: dict[str, float]) -> bool:
    if ours["pods"] >= PODS:
        verdict = "PASS" if ours["memory_mb"] < 500 else "FAIL"
        print(f"memory target: {ours['memory_mb']:.0f} MB for {ours['pods']:.0f} pods: {verdict} (< 500 MB)")
        return ours["memory_mb"] < 500
    print("memory target applies at 150,000 pods: run with --scale 1")
    return True


if __name__ == "__main__":
    main()
