"""The watchdog and `diagnose` on the two clusters behind Thanos (tests/bundle/thanos.py), each as one cluster.

- A KEDA ScaledObject's trigger reads vLLM's own `vllm:num_requests_waiting`, which cluster a's Prometheus
  scrapes and cluster b's does not: on Thanos Query the watchdog of cluster b flags it empty, that of cluster a
  does not (unscoped, b's would read a's series and call it fine).
- `diagnose --cluster a` finds cluster a's queue (7 waiting behind a 4-GPU replica Pending on 2/2/1/1 free
  GPUs); `--cluster b`, where nobody waits, is healthy.
- Two Prometheus replicas of one cluster (external labels differing by `replica` only): with
  `--replica-label replica` the findings are those of one Prometheus, not doubled.
- A store that Query cannot reach: diagnose exits 2 naming it, the watchdog counts `partial_response`.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from exporter.check.scope import Cluster
from exporter.cli import main
from exporter.demo.vllm_env import free_port
from exporter.diagnose.collect import read, rfc3339
from exporter.diagnose.promql import Scope
from exporter.diagnose.walk import Report, walk
from exporter.sources.prometheus import HttpPrometheus
from tests.bundle.servers import query, serve_exporter, wait_for, wait_http
from tests.bundle.thanos import LABEL, cluster_prometheus, querier
from tests.watchdog.test_watchdog_e2e import install_keda_crds, trigger

pytestmark = pytest.mark.slow

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "exporter/diagnose/schema.json").read_text())
NAMESPACE = "demo"
TRIGGER = 'sum(vllm:num_requests_waiting{job="vllm"})'  # vLLM's own name: scraped in cluster a only
SCALED = f'llm_query_empty{{kind="ScaledObject",namespace="{NAMESPACE}",name="vllm",location="trigger 0"}}'


@pytest.fixture(scope="module")
def keda(thanos: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kube = thanos["kube"]
    install_keda_crds(kube)
    scaled = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "vllm", "namespace": NAMESPACE},
        "spec": {"scaleTargetRef": {"name": "vllm"}, "triggers": [trigger(TRIGGER)]},
    }
    kube.apply(scaled)
    yield thanos


def watchdog(stack: ExitStack, thanos: dict[str, Any], name: str, prometheus_url: str, cluster: str) -> str:
    """A cluster role whose watchdog checks as `cluster` against `prometheus_url`; its URL, once ready."""
    config = {"interval_seconds": 10, "timeout_seconds": 5, "prometheus": {"url": prometheus_url}}
    config |= {"enabled": True, "cluster": cluster, "cluster_label": LABEL}
    proc, url = serve_exporter(
        thanos["tmp"],
        name,
        "cluster",
        f"127.0.0.1:{free_port()}",
        {"cluster": {"watchdog": config}},
        str(thanos["kube"].admin_kubeconfig),
    )
    wait_http(f"{url}/readyz", 60, stack.enter_context(proc))
    return url


def metrics(url: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        return [line for line in response.read().decode().splitlines() if not line.startswith("#")]


def diagnose(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diagnose", *args])
    out, err = capsys.readouterr()
    return code, out, err


def walked(url: str, cluster: str, replica_labels: tuple[str, ...] = ()) -> Report:
    at = time.time()
    scope = Scope(NAMESPACE, "", "15m", Cluster(LABEL, cluster))
    return walk(read(HttpPrometheus(url, replica_labels=replica_labels), scope, at), rfc3339(at - 900), NAMESPACE)


def findings(report: Report) -> list[tuple[str, str, str]]:
    return [(f.verdict_id, f.namespace, f.cluster) for f in report.findings]


def test_the_watchdog_flags_the_empty_trigger_of_cluster_b_only(keda: dict[str, Any]) -> None:
    with ExitStack() as stack:
        urls = {c: watchdog(stack, keda, f"watchdog-{c}", keda["query"], c) for c in ("a", "b")}

        def verdicts() -> dict[str, list[str]]:
            return {c: [x for x in metrics(url) if x.startswith(SCALED)] for c, url in urls.items()}

        wait_for(lambda: all(verdicts().values()), 40, "both watchdogs' verdicts on the ScaledObject")
        assert verdicts() == {"a": [f"{SCALED} 0"], "b": [f"{SCALED} 1"]}
        reasons = {c: [x for x in metrics(url) if x.startswith("llm_query_empty_reason{")] for c, url in urls.items()}
        assert reasons == {
            "a": [],
            "b": [
                f'llm_query_empty_reason{{kind="ScaledObject",namespace="{NAMESPACE}",name="vllm",'
                'location="trigger 0",reason="never_present"} 1'
            ],
        }
        for url in urls.values():
            assert 'llm_query_check_errors_total{reason="partial_response"} 0' in metrics(url)
    log = (keda["tmp"] / "watchdog-b.log").read_text()
    assert r"trigger 0 as cluster=\"b\" sees it:" in log, log[-2000:]  # logfmt escapes the quotes
    assert "vllm:num_requests_waiting: never present in the last 1d" in log, log[-2000:]


def test_diagnose_finds_cluster_as_queue_and_calls_b_healthy(
    thanos: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    url = thanos["query"]
    wait_for(lambda: walked(url, "a").status == "findings", 90, "cluster a's users waiting")
    a = walked(url, "a")
    assert [(w.namespace, w.model, w.queue_max) for w in a.waits] == [(NAMESPACE, "tiny", 7)]
    assert findings(a)[0] == ("placement.fragmented", NAMESPACE, "a")
    assert a.findings[0].verdict == (
        "demo/vllm-big-0 is Pending: 4 nvidia.com/gpu on one node needed; 6 free as 2/2/1/1 on 4 node(s)"
    )
    code, out, err = diagnose(
        capsys, "--prometheus", url, "--cluster", "a", "--namespace", NAMESPACE, "--output", "json"
    )
    body = json.loads(out)
    jsonschema.validate(body, SCHEMA)
    assert (code, body["status"], err) == (1, "findings", "")
    assert {f["cluster"] for f in body["findings"]} == {"a"}
    assert all(f'{LABEL}="a"' in e["query"] for f in body["findings"] for e in f["evidence"])
    code, out, _ = diagnose(capsys, "--prometheus", url, "--cluster", "a", "--namespace", NAMESPACE)
    assert code == 1 and out.startswith(f"llm-exporter diagnose: {len(a.findings)} findings (cluster a, namespace demo")
    assert "\n   cluster: a\n" in out
    # cluster b: the same namespace, model and Pending pod, but nobody waits there
    b = walked(url, "b")
    assert (b.status, b.waits, b.findings) == ("healthy", (), ())
    code, out, err = diagnose(capsys, "--prometheus", url, "--cluster", "b", "--namespace", NAMESPACE)
    assert (code, err) == (0, "")
    assert out.startswith("llm-exporter diagnose: healthy: nobody waits (cluster b, namespace demo, 15m up to ")
    code, out, err = diagnose(capsys, "--prometheus", url, "--cluster", "c")
    assert (code, out) == (2, "") and 'no engine series (llm_engine_info) with cluster="c"' in err


def test_two_replicas_of_one_cluster_are_one_with_the_replica_label(thanos: dict[str, Any]) -> None:
    """Cluster a scraped by two Prometheus replicas (external labels {cluster: r, replica: 0|1}) behind a Query
    run without --query.replica-label: deduplicated on `replica`, the findings are cluster a's, once."""
    tmp = thanos["tmp"] / "replicas"
    with ExitStack() as stack:
        endpoints = [
            cluster_prometheus(
                stack, tmp / f"prom-r{r}", thanos["targets"]["a"], thanos["single"], {LABEL: "r", "replica": r}
            )[1]
            for r in ("0", "1")
        ]
        url = querier(stack, tmp / "query.log", endpoints)
        wait_for(lambda: len(query(url, "rate(llm_prompt_tokens_total[5m]) > 0")) == 2, 60, "both replicas' rates")
        wait_for(lambda: walked(url, "r", ("replica",)).status == "findings", 60, "the replicas' findings")
        deduplicated = walked(url, "r", ("replica",))
        wait_for(lambda: walked(thanos["query"], "a").status == "findings", 90, "cluster a's findings")
        one = walked(thanos["query"], "a")
        assert [(i, ns) for i, ns, _ in findings(deduplicated)] == [(i, ns) for i, ns, _ in findings(one)]
        assert {c for _, _, c in findings(deduplicated)} == {"r"}
        assert [w.queue_max for w in deduplicated.waits] == [w.queue_max for w in one.waits] == [7]
        assert [f.verdict for f in deduplicated.findings if f.stage == "placement"] == [
            f.verdict for f in one.findings if f.stage == "placement"
        ]
        # without it every series comes twice: the queue reads 14 and the Pending pod is found twice
        doubled = walked(url, "r")
        assert [w.queue_max for w in doubled.waits] == [14]
        assert [f.verdict_id for f in doubled.findings].count("placement.fragmented") == 2


def test_a_store_down_exits_2_and_counts_partial_responses(
    keda: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A Query whose third store cannot be dialled (a strict endpoint nothing listens on): it may hold any
    cluster's series, so every query scoped to a cluster still needs it. Thanos answers in part; diagnose
    judges nothing and the watchdog keeps no verdict it cannot support."""
    dead = f"127.0.0.1:{free_port()}"
    with ExitStack() as stack:
        url = querier(stack, keda["tmp"] / "query-broken.log", keda["endpoints"], f"--endpoint-strict={dead}")
        code, out, err = diagnose(capsys, "--prometheus", url, "--cluster", "a", "--output", "json")
        assert (code, out) == (2, "")
        assert err.startswith(f"llm-exporter diagnose: {url}: partial response: no answer from {dead}: "), err
        assert err.rstrip().endswith("the series that store holds would be missing from every verdict: nothing judged")
        wd = watchdog(stack, keda, "watchdog-partial", url, "b")

        def counted() -> bool:
            prefix = 'llm_query_check_errors_total{reason="partial_response"} '
            return any(x.startswith(prefix) and float(x.split()[-1]) >= 1 for x in metrics(wd))

        wait_for(counted, 40, "a partial response counted")
        lines = metrics(wd)
        assert not [x for x in lines if x.startswith("llm_query_empty")], "a partial answer is no verdict"
        assert 'llm_query_check_errors_total{reason="bad_query"} 0' in lines
    assert f"partial response: no answer from {dead}" in (keda["tmp"] / "watchdog-partial.log").read_text()


def test_diagnose_without_a_cluster_walks_each_cluster_apart(
    thanos: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """No --cluster on the store of two clusters: one report per cluster, never their sum (cluster a's queue
    and its Pending replica are a's alone; b, where the same Deployment waits for nobody, is healthy)."""
    url = thanos["query"]
    wait_for(lambda: walked(url, "a").status == "findings", 90, "cluster a's users waiting")
    a = walked(url, "a")
    code, out, err = diagnose(capsys, "--prometheus", url, "--namespace", NAMESPACE)
    assert (code, err) == (1, "")
    first, second = out.split("\nllm-exporter diagnose: ")
    assert first.startswith(f"llm-exporter diagnose: {len(a.findings)} findings (cluster a, namespace demo, 15m up to ")
    assert second.startswith("healthy: nobody waits (cluster b, namespace demo, 15m up to ")
    code, out, err = diagnose(capsys, "--prometheus", url, "--namespace", NAMESPACE, "--output", "json")
    bodies = [json.loads(line) for line in out.splitlines()]
    for body in bodies:
        jsonschema.validate(body, SCHEMA)
    assert (code, err) == (1, "")
    assert [(b["cluster"], b["status"]) for b in bodies] == [("a", "findings"), ("b", "healthy")]
    assert [(f["stage"], f["cluster"]) for f in bodies[0]["findings"]] == [(f.stage, "a") for f in a.findings]
    assert bodies[1]["findings"] == []
