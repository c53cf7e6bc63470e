"""Replica start-up phases from pod timestamps, each start-up counted once, only those the exporter saw."""

from __future__ import annotations

from typing import Any

from exporter.exposition import render
from exporter.replicas import pod_fields, startup
from exporter.replicas.collector import families

SCRAPE = "llm-exporter.io/scrape"


def pod(
    uid: str, created: str, scheduled: str | None = None, ready: str | None = None, owner: str = "vllm-7d9f8c6b5d"
) -> dict[str, Any]:
    conditions = []
    if scheduled:
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled})
    conditions.append({"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": ready or created})
    return {
        "metadata": {
            "uid": uid,
            "name": f"pod-{uid}",
            "namespace": "llm",
            "creationTimestamp": created,
            "annotations": {SCRAPE: "true"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": owner, "controller": True}],
        },
        "status": {"conditions": conditions},
    }


def record(obj: dict[str, Any]) -> startup.PodStart:
    made = startup.pod_start(obj, SCRAPE)
    assert made is not None
    return made


def owned(kind: str, name: str, controller: bool = True) -> dict[str, Any]:
    return {"name": "bare", "ownerReferences": [{"kind": kind, "name": name, "controller": controller}]}


def test_workload_names() -> None:
    assert pod_fields.workload_of(owned("ReplicaSet", "vllm-7d9f8c6b5d")) == "vllm"  # the Deployment's name
    assert pod_fields.workload_of(owned("StatefulSet", "vllm")) == "vllm"
    assert pod_fields.workload_of(owned("ReplicaSet", "x-1", controller=False)) == "bare"


def test_the_pods_of_a_leader_worker_set_are_its_workload() -> None:
    """The LeaderWorkerSet controller puts a group's workers in a StatefulSet named after the leader pod
    (`deepseek-0`) and labels every pod with the set's name, which the audit and an HPA name as the workload
    (the workers were `deepseek-0`)."""
    label = {"leaderworkerset.sigs.k8s.io/name": "deepseek"}
    leader = {**owned("StatefulSet", "deepseek"), "name": "deepseek-0", "labels": label}
    worker = {**owned("StatefulSet", "deepseek-0"), "name": "deepseek-0-1", "labels": label}
    assert [pod_fields.workload_of(m) for m in (leader, worker)] == ["deepseek", "deepseek"]


def test_phases_from_the_conditions() -> None:
    p = record(pod("a", "2026-12-03T10:00:00Z", "2026-12-03T10:00:04Z", "2026-12-03T10:02:04Z"))
    assert (p.namespace, p.workload) == ("llm", "vllm")
    assert startup.durations(p) == {"scheduling": 4.0, "starting": 120.0}
    pending = record(pod("b", "2026-12-03T10:00:00Z"))
    assert startup.durations(pending) == {}
    other = pod("c", "2026-12-03T10:00:00Z")
    other["metadata"]["annotations"] = {}
    assert startup.pod_start(other, SCRAPE) is None
    assert startup.pod_start(other, "") is not None  # selected by a label selector instead


def test_each_start_up_is_counted_once_and_only_when_seen() -> None:
    old = record(pod("old", "2026-12-03T09:00:00Z", "2026-12-03T09:00:01Z", "2026-12-03T09:01:00Z"))
    tracker = startup.StartupTracker(started_at=old.created + 3600.4)  # the exporter started at 10:00:00.4
    new = pod("new", "2026-12-03T10:00:00Z")
    tracker.update([old, record(new)])  # `old` was Ready before the exporter started
    assert {key: h.count for key, h in tracker.histograms.items()} == {
        ("llm", "vllm", "scheduling"): 0,  # the workload is known: its histograms start at zero
        ("llm", "vllm", "starting"): 0,
    }
    scheduled = pod("new", "2026-12-03T10:00:00Z", "2026-12-03T10:00:30Z")
    tracker.update([old, record(scheduled)])
    tracker.update([old, record(scheduled)])  # seen again: not counted again
    ready = pod("new", "2026-12-03T10:00:00Z", "2026-12-03T10:00:30Z", "2026-12-03T10:05:30Z")
    # created after the exporter started and Ready before it looked: still a start-up it saw happen
    same_second = pod("same", "2026-12-03T10:00:00Z", "2026-12-03T10:00:00Z", "2026-12-03T10:00:00Z")
    late = pod("late", "2026-12-03T10:01:00Z", "2026-12-03T10:01:02Z", "2026-12-03T10:03:02Z")
    tracker.update([old, record(ready), record(late), record(same_second)])
    scheduling = tracker.histograms[("llm", "vllm", "scheduling")]
    starting = tracker.histograms[("llm", "vllm", "starting")]
    assert (scheduling.count, scheduling.sum) == (3, 32.0)
    assert (starting.count, starting.sum) == (3, 420.0)
    assert starting.buckets[startup.BUCKETS.index(1.0)] == 1  # the same-second pod: 0 s
    assert starting.buckets[startup.BUCKETS.index(120.0)] == 2  # 120 s counts in le=120
    assert starting.buckets[startup.BUCKETS.index(300.0)] == 3


def test_pods_ready_not_yet_ready_and_the_oldest() -> None:
    now = record(pod("x", "2026-12-03T10:00:00Z")).created + 90
    pods = [
        record(pod("x", "2026-12-03T10:00:00Z")),
        record(pod("y", "2026-12-03T10:01:00Z", "2026-12-03T10:01:01Z")),
        record(pod("z", "2026-12-03T09:00:00Z", "2026-12-03T09:00:01Z", "2026-12-03T09:01:00Z")),
        record(pod("w", "2026-12-03T09:00:00Z", "2026-12-03T09:00:01Z", "2026-12-03T09:01:00Z", owner="o-5c9d8f7b6")),
    ]
    assert startup.replica_counts(pods, now) == {("llm", "vllm"): (1, 2, 90.0), ("llm", "o"): (1, 0, None)}


def test_exposition() -> None:
    h = startup.Histogram([0] * len(startup.BUCKETS))
    h.observe(4.0)
    text = render(families({("llm", "vllm", "scheduling"): h}, {("llm", "vllm"): (3, 1, 42.5)}))
    lines = text.splitlines()
    assert lines[:3] == [
        "# HELP llm_replica_startup_seconds Start-up of engine replicas this exporter saw start, by phase: scheduling "
        "(created to scheduled) and starting (scheduled to Ready) from the cluster role, first_token (Ready to the "
        "first scrape whose time-to-first-token count is non-zero, to the scrape interval) from the node role's "
        "discovered pods. Autoscalers are late by this much: set minimum replicas from it.",
        "# TYPE llm_replica_startup_seconds histogram",
        'llm_replica_startup_seconds_bucket{namespace="llm",workload="vllm",phase="scheduling",le="1.0"} 0',
    ]
    assert 'llm_replica_startup_seconds_bucket{namespace="llm",workload="vllm",phase="scheduling",le="5.0"} 1' in lines
    assert lines[-12:] == [
        'llm_replica_startup_seconds_bucket{namespace="llm",workload="vllm",phase="scheduling",le="+Inf"} 1',
        'llm_replica_startup_seconds_sum{namespace="llm",workload="vllm",phase="scheduling"} 4',
        'llm_replica_startup_seconds_count{namespace="llm",workload="vllm",phase="scheduling"} 1',
        "# HELP llm_replica_ready Engine pods of the workload that are Ready.",
        "# TYPE llm_replica_ready gauge",
        'llm_replica_ready{namespace="llm",workload="vllm"} 3',
        "# HELP llm_replica_starting Engine pods of the workload created but not yet Ready (0: none).",
        "# TYPE llm_replica_starting gauge",
        'llm_replica_starting{namespace="llm",workload="vllm"} 1',
        "# HELP llm_replica_starting_oldest_seconds Seconds since the oldest engine pod that is not yet Ready was "
        "created.",
        "# TYPE llm_replica_starting_oldest_seconds gauge",
        'llm_replica_starting_oldest_seconds{namespace="llm",workload="vllm"} 42.5',
    ]
