"""Ready -> first token, each readiness of a pod counted once, only start-ups the exporter could see."""

from __future__ import annotations

from exporter.catalogue import engine as engine_spec
from exporter.engines.collector import Outcome
from exporter.engines.discovery import PodRecord
from exporter.engines.mapping import Mapped
from exporter.engines.targets import from_url
from exporter.exposition import render
from exporter.replicas.collector import FirstTokenCollector
from exporter.replicas.first_token import FirstTokenTracker, Look

START = 1_000.0  # the exporter's start
KEY = ("llm", "vllm-0")


def look(ready: float | None, requests: float, pod: str = "vllm-0") -> Look:
    return Look("llm", pod, "vllm", ready, requests)


def observed(tracker: FirstTokenTracker) -> tuple[int, float]:
    h = tracker.histograms[("llm", "vllm", "first_token")]
    return h.count, h.sum


def test_a_pod_seen_starting_counts_from_ready_to_the_first_scrape_with_a_request() -> None:
    tracker = FirstTokenTracker(START)
    tracker.update([look(None, 0)], 1_010, {KEY})  # Running, loading weights
    tracker.update([look(1_100, 0)], 1_110, {KEY})  # Ready, nobody sent anything yet
    assert observed(tracker) == (0, 0.0)  # born at zero: increase() counts the first one
    tracker.update([look(1_100, 2)], 1_145, {KEY})
    tracker.update([look(1_100, 9)], 1_160, {KEY})  # counted once
    assert observed(tracker) == (1, 45.0)


def test_a_pod_ready_after_the_exporter_started_counts_even_if_it_served_before_the_first_look() -> None:
    tracker = FirstTokenTracker(START)
    tracker.update([look(1_100, 3)], 1_115, {KEY})
    assert observed(tracker) == (1, 15.0)


def test_pods_already_serving_when_the_exporter_starts_are_not_counted() -> None:
    tracker = FirstTokenTracker(START)
    tracker.update([look(500, 40)], 1_015, {KEY})
    tracker.update([look(500, 41)], 1_030, {KEY})
    assert observed(tracker) == (0, 0.0)


def test_a_pod_ready_before_the_exporter_started_that_never_served_counts_its_whole_wait() -> None:
    tracker = FirstTokenTracker(START)
    tracker.update([look(900, 0)], 1_015, {KEY})
    tracker.update([look(900, 1)], 1_030, {KEY})
    assert observed(tracker) == (1, 130.0)


def test_a_readiness_blip_of_a_serving_engine_is_not_a_start_up_but_a_restart_is() -> None:
    tracker = FirstTokenTracker(START)
    tracker.update([look(1_100, 5)], 1_115, {KEY})  # counted: 15 s
    tracker.update([look(None, 6)], 1_130, {KEY})  # readiness probe failed under load
    tracker.update([look(1_140, 8)], 1_145, {KEY})  # Ready again, the same process: its count went on
    assert observed(tracker) == (1, 15.0)
    tracker.update([], 1_160, {KEY})  # the container restarts: no scrape, the pod is still there
    tracker.update([look(1_300, 2)], 1_310, {KEY})  # a new engine process: its count started again
    assert observed(tracker) == (2, 25.0)


def test_a_deleted_pod_is_forgotten_and_its_successor_of_the_same_name_counts() -> None:
    tracker = FirstTokenTracker(START)
    tracker.update([look(1_100, 5)], 1_110, {KEY})
    tracker.update([], 1_200, set())  # a StatefulSet's pod deleted ...
    tracker.update([look(1_250, 7)], 1_260, {KEY})  # ... and created again under its name
    assert observed(tracker) == (2, 20.0)


def outcome(pod: str, ttft_counts: list[float] | None) -> Outcome:
    target = from_url("http://10.0.0.1:8000/metrics", "llm", pod, "vllm")
    if ttft_counts is None:
        return Outcome(target, None, "connection", 0.1)
    mapped = Mapped("0.32.0", "endpoint")
    mapped.samples[engine_spec.TIME_TO_FIRST_TOKEN] = [
        ("_count", f'{{namespace="llm",pod="{pod}",engine="vllm",model="m{i}",dp_rank="0"}}', n)
        for i, n in enumerate(ttft_counts)
    ]
    return Outcome(target, mapped, "", 0.1)


def test_the_collector_sums_the_models_of_a_pod_and_skips_targets_without_a_discovered_pod() -> None:
    pods = [PodRecord("llm", "vllm-0", "10.0.0.1", "Running", (), "vllm", 1_100.0)]
    now = [1_000.0]
    collector = FirstTokenCollector(lambda: pods, clock=lambda: now[0])
    now[0] = 1_120.0
    collector.observe([outcome("vllm-0", [0, 0]), outcome("static-0", [4])])
    now[0] = 1_135.5
    collector.observe([outcome("vllm-0", [1, 2]), outcome("static-0", [5])])
    text = render(collector.collect())
    assert 'llm_replica_startup_seconds_count{namespace="llm",workload="vllm",phase="first_token"} 1\n' in text
    assert 'llm_replica_startup_seconds_sum{namespace="llm",workload="vllm",phase="first_token"} 35.5\n' in text
    assert 'le="30.0"} 0\n' in text and 'le="60.0"} 1\n' in text
    assert "static-0" not in text


def test_a_failing_observation_is_reported_by_collect_and_clears_on_the_next_success() -> None:
    healthy = [PodRecord("llm", "vllm-0", "10.0.0.1", "Running", (), "vllm", None)]
    answers: list[list[PodRecord] | None] = [None, healthy]

    def pods() -> list[PodRecord]:
        found = answers.pop(0)
        if found is None:
            raise ConnectionError("watch cache gone")
        return found

    collector = FirstTokenCollector(pods)
    collector.observe([outcome("vllm-0", [0])])
    try:
        collector.collect()
        raise AssertionError("collect() should report the failed observation")
    except RuntimeError as exc:
        assert str(exc) == "ConnectionError: watch cache gone"
    collector.observe([outcome("vllm-0", [0])])
    assert 'phase="first_token"} 0\n' in render(collector.collect())
