"""Discovery of opted-in engine pods on the own node: pure rules, then the real client against a fake API."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from exporter.config import Engines, KubernetesDiscovery
from exporter.engines.discovery import PodRecord, pod_record, target_for
from exporter.exposition import render
from tests.collectors import build_engine_collectors
from tests.engines.engine_servers import engine_server, recorded
from tests.fakes.kube_api import FakeKubeAPI

PREFIX = "llm-exporter.io"


def pod(name: str, node: str, ip: str, annotations: dict[str, str], phase: str = "Running") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "llm", "uid": f"uid-{name}", "annotations": annotations},
        "spec": {"nodeName": node, "containers": [{"name": "vllm", "image": "vllm/vllm-openai"}]},
        "status": {"phase": phase, "podIP": ip},
    }


OPT_IN = {f"{PREFIX}/scrape": "true"}


@pytest.mark.parametrize(
    ("annotations", "ip", "phase", "url"),
    [
        (OPT_IN, "10.1.2.3", "Running", "http://10.1.2.3:8000/metrics"),
        ({**OPT_IN, f"{PREFIX}/port": "9000", f"{PREFIX}/path": "/m"}, "10.1.2.3", "Running", "http://10.1.2.3:9000/m"),
        (OPT_IN, "fd00::1", "Running", "http://[fd00::1]:8000/metrics"),
        (OPT_IN, "10.1.2.3", "Pending", None),
        (OPT_IN, "", "Running", None),
        ({**OPT_IN, f"{PREFIX}/port": "http"}, "10.1.2.3", "Running", None),
        ({**OPT_IN, f"{PREFIX}/engine": "tgi"}, "10.1.2.3", "Running", "http://10.1.2.3:8000/metrics"),
        ({**OPT_IN, f"{PREFIX}/engine": "ollama"}, "10.1.2.3", "Running", None),  # no Prometheus endpoint
        (OPT_IN, "evil.example.com", "Running", None),  # only pod IPs are ever fetched
    ],
)
def test_target_rules(annotations: dict[str, str], ip: str, phase: str, url: str | None) -> None:
    record = pod_record(pod("p", "n", ip, annotations, phase), PREFIX)
    assert record is not None
    target = target_for(record, KubernetesDiscovery(enabled=True))
    assert (target.metrics_url if target else None) == url


def test_pods_without_opt_in_are_not_kept() -> None:
    assert pod_record(pod("p", "n", "10.0.0.1", {}), PREFIX) is None
    assert pod_record(pod("p", "n", "10.0.0.1", {f"{PREFIX}/scrape": "false"}), PREFIX) is None
    kept = pod_record(pod("p", "n", "10.0.0.1", {**OPT_IN, "other/secret": "x"}), PREFIX)
    assert kept == PodRecord("llm", "p", "10.0.0.1", "Running", ((f"{PREFIX}/scrape", "true"),), "p", None)


def test_the_record_keeps_the_workload_and_when_the_pod_became_ready() -> None:
    """As a Deployment's pod reads: owned by its ReplicaSet, Ready since the kubelet's probe passed."""
    obj = pod("vllm-7d9f8c6b5d-x2x4q", "n", "10.0.0.1", OPT_IN)
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "vllm-7d9f8c6b5d", "uid": "u", "controller": True}
    ]
    obj["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-03T10:00:00Z"},
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-03T10:04:10Z"},
    ]
    record = pod_record(obj, PREFIX)
    assert record is not None
    assert (record.workload, record.ready) == ("vllm", 1796292250.0)
    obj["status"]["conditions"][1]["status"] = "False"  # readiness probe failing: not Ready (again)
    assert pod_record(obj, PREFIX) == PodRecord(
        "llm", "vllm-7d9f8c6b5d-x2x4q", "10.0.0.1", "Running", ((f"{PREFIX}/scrape", "true"),), "vllm", None
    )


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_discovery_scrapes_only_opted_in_pods_on_this_node(tmp_path: Path) -> None:
    api = FakeKubeAPI(bookmark_interval=0.2).start()
    try:
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        with engine_server("ok", recorded("0.32.0")) as engine:
            port = engine.url.rsplit(":", 1)[1]
            ours = {**OPT_IN, f"{PREFIX}/port": port}
            api.apply(pod("vllm-0", "node-1", "127.0.0.1", ours))
            api.apply(pod("vllm-other-node", "node-2", "127.0.0.1", ours))
            api.apply(pod("not-opted-in", "node-1", "127.0.0.1", {}))
            config = Engines(kubernetes_discovery=KubernetesDiscovery(enabled=True, node_name="node-1"))
            discovery, collector, first_tokens = build_engine_collectors(config, kubeconfig)
            discovery.start()  # type: ignore[attr-defined]
            try:
                wait_for(discovery.ready)  # type: ignore[attr-defined]
                text = render([*discovery.collect(), *collector.collect()])
                assert 'llm_engine_up{namespace="llm",pod="vllm-0",engine="vllm"} 1' in text
                assert "vllm-other-node" not in text and "not-opted-in" not in text
                assert "llm_kubernetes_last_sync_timestamp_seconds " in text
                # its pod, created by hand, has no Ready condition: nothing to count, the histogram is born at 0
                count = 'llm_replica_startup_seconds_count{namespace="llm",workload="vllm-0",phase="first_token"} 0'
                assert count in render(first_tokens.collect())
                assert all("fieldSelector=spec.nodeName%3Dnode-1" in r for r in api.requests if "/pods" in r)
                api.delete("pods", "llm", "vllm-0")
                wait_for(lambda: not discovery.targets())  # type: ignore[attr-defined]
                assert "llm_engine_up{" not in render(collector.collect())
            finally:
                discovery.close()  # type: ignore[attr-defined]
                collector.close()  # type: ignore[attr-defined]
    finally:
        api.stop()
