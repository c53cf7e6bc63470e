"""Two clusters behind Thanos, with real parts: in each cluster a Prometheus 3 with `external_labels:
{cluster: a|b}` scrapes its own `llm-exporter serve` node role (over its own replayed vLLM engine) and
cluster role, a Thanos sidecar serves it, one Thanos Query fans out to both, and Thanos Ruler evaluates the
bundle's rules rendered with `--cluster-label cluster` through that Query.

The two clusters use the same namespace, pod and model names (demo/vllm-0 serving "tiny"); cluster a has 7
requests waiting, cluster b none. Both cluster roles watch one real control plane (kwok nodes with 2/2/1/1
free GPUs, a 4-GPU pod left Pending), so a sum across the clusters would show every GPU twice. Every
dashboard query (rendered with the label) returns, for each cluster, exactly what that cluster's own
Prometheus returns for the single-cluster query, never the two summed; and LLMRequestQueueBacklog fires
for cluster a only, carrying cluster="a". A cluster whose store fails is an error, not an empty result.
"""

from __future__ import annotations

import functools
import json
import math
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from exporter.bundle import cluster, render
from exporter.check.evaluate import Checker
from exporter.check.inputs import Query, file_queries
from exporter.demo.vllm_env import free_port
from exporter.sources.prometheus import HttpPrometheus, PrometheusError
from tests.bundle.replay import ReplayedVllm, fast_rules, node_config
from tests.bundle.servers import process, prometheus, query, serve_exporter, static_job, wait_for, wait_http
from tests.bundle.test_e2e import two_two_one_one
from tests.kubecluster import start_cluster
from tests.peers import peer

pytestmark = pytest.mark.slow

CLUSTERS = {"a": 7, "b": 0}  # cluster -> requests waiting at its engine
LABEL = "cluster"


def instant(url: str, expr: str, at: float) -> list[dict[str, Any]]:
    data = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"}).encode()
    with urllib.request.urlopen(f"{url}/api/v1/query", data=data, timeout=30) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    assert not body.get("warnings"), body  # a partial response from Thanos Query
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def samples(result: list[dict[str, Any]]) -> dict[tuple[tuple[str, str], ...], float]:
    """Series (labels without __name__) -> value; NaN as a string so that two NaNs compare equal."""
    out = {}
    for series in result:
        labels = tuple(sorted((k, v) for k, v in series["metric"].items() if k != "__name__"))
        value = float(series["value"][1])
        out[labels] = value
    return out


def growing(prometheus_url: str) -> bool:
    return bool(query(prometheus_url, "rate(llm_prompt_tokens_total[5m]) > 0"))


def same(a: dict[Any, float], b: dict[Any, float]) -> bool:
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12) for k in a
    )


@pytest.fixture(scope="module")
def thanos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("thanos")
    binary = peer("thanos")
    engines = {name: ReplayedVllm(waiting) for name, waiting in CLUSTERS.items()}
    # each cluster's Prometheus records its own series with the single-cluster rules (its series have no
    # cluster label; the sidecar adds the external one); Thanos Ruler evaluates the clustered rules over all
    single = fast_rules(tmp / "single.yaml")
    rules = tmp / "rules.yaml"
    rules.write_text(cluster.rule_file(single.read_text(), LABEL))
    try:
        with ExitStack() as stack:
            # one real control plane (kwok nodes, the real scheduler) that each cluster's cluster role
            # watches: the same GPUs and pending pod twice, so a sum across clusters would show double
            kube = stack.enter_context(start_cluster(tmp / "kube"))
            two_two_one_one(kube)
            proms, endpoints = {}, []
            for name, engine in engines.items():
                exporter, url = serve_exporter(
                    tmp, f"node-{name}", "node", f"127.0.0.1:{free_port()}", node_config(engine)
                )
                wait_http(f"{url}/readyz", proc=stack.enter_context(exporter))
                role, role_url = serve_exporter(
                    tmp, f"cluster-{name}", "cluster", f"127.0.0.1:{free_port()}", {}, str(kube.admin_kubeconfig)
                )
                wait_http(f"{role_url}/readyz", timeout=60, proc=stack.enter_context(role))
                scrape = [
                    static_job("llm-exporter", [url]),
                    static_job("llm-exporter-cluster", [role_url])
                    | {"relabel_configs": [{"target_label": "job", "replacement": "llm-exporter"}]},
                ]
                prom = stack.enter_context(
                    prometheus(
                        tmp / f"prom-{name}",
                        scrape,
                        rule_files=[single],
                        external_labels={LABEL: name},
                    )
                )
                proms[name] = prom
                grpc, http = free_port(), free_port()
                args = [
                    binary,
                    "sidecar",
                    f"--prometheus.url={prom}",
                    f"--tsdb.path={tmp / f'prom-{name}' / 'data'}",
                    f"--grpc-address=127.0.0.1:{grpc}",
                    f"--http-address=127.0.0.1:{http}",
                    "--log.level=warn",
                ]
                sidecar = stack.enter_context(process(args, tmp / f"sidecar-{name}.log"))
                wait_http(f"http://127.0.0.1:{http}/-/ready", timeout=60, proc=sidecar)
                endpoints.append(f"127.0.0.1:{grpc}")
            rule_grpc, rule_http = free_port(), free_port()
            query_grpc, query_http = free_port(), free_port()
            query_url = f"http://127.0.0.1:{query_http}"
            args = [
                binary,
                "query",
                f"--grpc-address=127.0.0.1:{query_grpc}",
                f"--http-address=127.0.0.1:{query_http}",
                *(f"--endpoint={e}" for e in endpoints),
                "--query.replica-label=replica",
                "--log.level=warn",
            ]
            querier = stack.enter_context(process(args, tmp / "query.log"))
            wait_http(f"{query_url}/-/ready", timeout=60, proc=querier)
            ruler_url = f"http://127.0.0.1:{rule_http}"
            args = [
                binary,
                "rule",
                f"--data-dir={tmp / 'rule'}",
                f"--rule-file={rules}",
                f"--query={query_url.removeprefix('http://')}",
                f"--grpc-address=127.0.0.1:{rule_grpc}",
                f"--http-address=127.0.0.1:{rule_http}",
                "--eval-interval=1s",
                '--label=replica="ruler-0"',
                "--log.level=warn",
            ]
            ruler = stack.enter_context(process(args, tmp / "rule.log"))
            wait_http(f"{ruler_url}/-/ready", timeout=60, proc=ruler)
            # the Ruler serves its recorded series over the Store API only: a Query of its own reads them
            recorded_http = free_port()
            args = [
                binary,
                "query",
                f"--grpc-address=127.0.0.1:{free_port()}",
                f"--http-address=127.0.0.1:{recorded_http}",
                f"--endpoint=127.0.0.1:{rule_grpc}",
                "--query.replica-label=replica",
                "--log.level=warn",
            ]
            recorded = stack.enter_context(process(args, tmp / "query-recorded.log"))
            recorded_url = f"http://127.0.0.1:{recorded_http}"
            wait_http(f"{recorded_url}/-/ready", timeout=60, proc=recorded)
            yield {
                "query": query_url,
                "ruler": ruler_url,
                "recorded": recorded_url,
                "prometheus": proms,
                "endpoints": endpoints,
                "tmp": tmp,
            }
    finally:
        for engine in engines.values():
            engine.close()


def test_every_dashboard_query_returns_each_clusters_own_values(thanos: dict[str, Any], tmp_path: Path) -> None:
    proms, query_url = thanos["prometheus"], thanos["query"]
    for prom in proms.values():  # rates need two samples of every series
        wait_for(functools.partial(growing, prom), 60, "growing counters")
    wait_for(lambda: len(query(query_url, "llm_engine_up")) == 2, 60, "both clusters through Thanos Query")
    board = tmp_path / "llm-inference-overview.json"
    board.write_text(render.dashboard_files(render.ROOT, LABEL)[board.name])
    clustered = file_queries(board)
    single = file_queries(render.ROOT / "dashboards/overview.json")
    assert [q.where for q in clustered] == [q.where for q in single] and len(single) > 30
    # rates over both clusters through Thanos (its sidecars read the same TSDBs), then a moment a little in
    # the past, which both Prometheus servers have scraped: the same samples everywhere
    wait_for(lambda: len(query(query_url, "rate(llm_prompt_tokens_total[5m]) > 0")) == 2, 60, "rates via Thanos")
    time.sleep(3)
    at = time.time() - 2
    both = 0
    nonempty: list[tuple[str, int]] = []
    for multi, one in zip(clustered, single, strict=True):
        result = instant(query_url, multi.expr, at)
        clusters = {s["metric"].get(LABEL) for s in result}
        assert clusters <= set(CLUSTERS), (multi.where, multi.expr, clusters)
        for name, prom in proms.items():
            own = samples([s for s in result if s["metric"][LABEL] == name])
            # the cluster's Prometheus stores no cluster label (it is external): added to compare
            want = {tuple(sorted((*k, (LABEL, name)))): v for k, v in samples(instant(prom, one.expr, at)).items()}
            assert same(own, want), (multi.where, multi.expr, name, own, want)
        both += clusters == set(CLUSTERS)
        nonempty.append((one.where, len(result)))
    # the Cluster variable set to b, its values looked up through Thanos as `check` does: b's series only
    lookup = HttpPrometheus(query_url)
    only_b = file_queries(board, {LABEL: "b"}, lookup)
    assert [q.where for q in only_b] == [q.where for q in single]
    for multi, one in zip(only_b, single, strict=True):
        want = {tuple(sorted((*k, (LABEL, "b")))): v for k, v in samples(instant(proms["b"], one.expr, at)).items()}
        assert same(samples(instant(query_url, multi.expr, at)), want), (multi.where, multi.expr)
    # not a comparison of empty results: the engine, cluster GPU and pending-pod panels show both clusters;
    # the node role's GPU panels, the route panels and the replica/autoscaler panels are empty in both (no
    # GPU driver, no routes, no engine Deployment here: tests/bundle/test_e2e.py has those, one cluster)
    assert both >= 33, "; ".join(w for w, n in nonempty if n == 0)


def test_the_rules_fire_under_thanos_ruler_for_cluster_a_only(thanos: dict[str, Any]) -> None:
    ruler = thanos["ruler"]

    def alerts(name: str = "LLMRequestQueueBacklog") -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{ruler}/api/v1/alerts", timeout=10) as response:
            # Thanos Ruler's own alerts API: {"data": {"Alerts": [...]}}, labels as a map
            found: list[dict[str, Any]] = json.load(response)["data"]["Alerts"]
        return [a for a in found if a["labels"]["alertname"] == name and a["state"] == "firing"]

    wait_for(lambda: bool(alerts()), 90, "LLMRequestQueueBacklog firing in Thanos Ruler")
    time.sleep(3)  # a few more evaluations: cluster b stays silent
    (backlog,) = alerts()
    assert {k: v for k, v in backlog["labels"].items() if k != "replica"} == {
        "alertname": "LLMRequestQueueBacklog",
        "severity": "warning",
        LABEL: "a",
        "namespace": "demo",
        "model": "tiny",
    }
    assert backlog["annotations"]["summary"] == "7 requests are queued for demo/tiny."
    # the Pending pod both cluster roles see: one alert per cluster, each naming its own
    pending = "LLMPodPendingWithFreeGPUs"
    wait_for(lambda: len(alerts(pending)) == 2, 60, f"{pending} for both clusters")
    assert sorted((a["labels"][LABEL], a["labels"]["pod"], a["labels"]["reason"]) for a in alerts(pending)) == [
        ("a", "vllm-big-0", "fragmented"),
        ("b", "vllm-big-0", "fragmented"),
    ]
    # every rule evaluates over both clusters' series: no join across them finds two matches
    with urllib.request.urlopen(f"{ruler}/api/v1/rules", timeout=10) as response:
        groups = json.load(response)["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) > 40
    assert [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"] == []
    # and the recorded series are per cluster: one queue spread each
    spread = instant(thanos["recorded"], "llm:replica_queue_spread", time.time())
    assert sorted(s["metric"][LABEL] for s in spread) == ["a", "b"]


def test_a_partial_response_is_an_error_not_an_empty_result(thanos: dict[str, Any]) -> None:
    """A third cluster's Prometheus goes down behind its sidecar: Thanos Query still answers, with the other
    clusters' series and a warning. The client asks for no partial responses, so `check` reports an error
    instead of reading the missing cluster's series as absent."""
    tmp: Path = thanos["tmp"] / "partial"
    binary = peer("thanos")
    grpc, http, query_http = free_port(), free_port(), free_port()
    query_url = f"http://127.0.0.1:{query_http}"
    with ExitStack() as stack:
        with ExitStack() as down_later:
            prom = down_later.enter_context(
                prometheus(
                    tmp / "prom-c", [static_job("self", [thanos["prometheus"]["a"]])], external_labels={LABEL: "c"}
                )
            )
            args = [
                binary,
                "sidecar",
                f"--prometheus.url={prom}",
                f"--tsdb.path={tmp / 'prom-c' / 'data'}",
                f"--grpc-address=127.0.0.1:{grpc}",
                f"--http-address=127.0.0.1:{http}",
                "--log.level=warn",
            ]
            sidecar = stack.enter_context(process(args, tmp / "sidecar-c.log"))
            wait_http(f"http://127.0.0.1:{http}/-/ready", timeout=60, proc=sidecar)
            args = [
                binary,
                "query",
                f"--grpc-address=127.0.0.1:{free_port()}",
                f"--http-address=127.0.0.1:{query_http}",
                *(f"--endpoint={e}" for e in [*thanos["endpoints"], f"127.0.0.1:{grpc}"]),
                "--log.level=warn",
            ]
            querier = stack.enter_context(process(args, tmp / "query.log"))
            wait_http(f"{query_url}/-/ready", timeout=60, proc=querier)

            def three() -> bool:
                return {s["metric"].get(LABEL) for s in query(query_url, "up")} == {"a", "b", "c"}

            wait_for(three, 60, "three clusters through Thanos Query")
        # Prometheus c is down, its sidecar still up: Thanos' default is a partial answer with a warning
        data = urllib.parse.urlencode({"query": "llm_engine_up"}).encode()
        with urllib.request.urlopen(f"{query_url}/api/v1/query", data=data, timeout=30) as response:
            body = json.load(response)
        assert body["status"] == "success" and body["warnings"], body
        assert sorted(s["metric"][LABEL] for s in body["data"]["result"]) == ["a", "b"]
        # what the exporter's client and `check` make of it
        with pytest.raises(PrometheusError, match="receive series from"):
            HttpPrometheus(query_url).query("llm_engine_up")
        result = Checker(HttpPrometheus(query_url)).check(
            Query("dashboard.json", "panel 'Engines up'", 'sum by (cluster) (llm_engine_up{cluster="c"})')
        )
        assert result.status == "error", result
        assert "connection refused" in result.reasons[0]
