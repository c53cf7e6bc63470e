"""Two clusters behind Thanos, with real parts, shared by the Thanos tests (tests/bundle/conftest.py runs it once).

In each cluster a Prometheus 3 with `external_labels: {cluster: a|b}` scrapes its own `llm-exporter serve` node
role (over its own replayed vLLM engine) and cluster role, a Thanos sidecar serves it, one Thanos Query fans
out to both, and Thanos Ruler evaluates the bundle's rules rendered with `--cluster-label cluster` through that
Query. The two clusters use the same namespace, pod and model names (demo/vllm-0 serving "tiny"); cluster a has
7 requests waiting, cluster b none. Both cluster roles watch one real control plane (kwok nodes with 2/2/1/1
free GPUs, a 4-GPU pod left Pending), so a sum across the clusters would show every GPU twice.

Cluster a's Prometheus also scrapes its engine's own /metrics (job "vllm", as a KEDA trigger written against
vLLM's names reads it); cluster b's does not: a trigger on `vllm:*` has data in a and none in b.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from exporter.bundle import cluster
from exporter.demo.vllm_env import free_port
from tests.bundle.replay import ReplayedVllm, fast_rules, node_config
from tests.bundle.servers import process, prometheus, serve_exporter, static_job, wait_http
from tests.bundle.test_e2e import two_two_one_one
from tests.kubecluster import start_cluster
from tests.peers import peer

CLUSTERS = {"a": 7, "b": 0}  # cluster -> requests waiting at its engine
LABEL = "cluster"


def scrape_jobs(node_url: str, role_url: str) -> list[dict[str, Any]]:
    """One cluster's exporter jobs, both as job "llm-exporter" (as the deploy/ monitors name them)."""
    return [
        static_job("llm-exporter", [node_url]),
        static_job("llm-exporter-cluster", [role_url])
        | {"relabel_configs": [{"target_label": "job", "replacement": "llm-exporter"}]},
    ]


def sidecar(stack: ExitStack, workdir: Path, prometheus_url: str, name: str) -> str:
    """A Thanos sidecar for the Prometheus at `prometheus_url` (its TSDB under `workdir`); its Store API address."""
    grpc, http = free_port(), free_port()
    args = [
        peer("thanos"),
        "sidecar",
        f"--prometheus.url={prometheus_url}",
        f"--tsdb.path={workdir / 'data'}",
        f"--grpc-address=127.0.0.1:{grpc}",
        f"--http-address=127.0.0.1:{http}",
        "--log.level=warn",
    ]
    proc = stack.enter_context(process(args, workdir.parent / f"sidecar-{name}.log"))
    wait_http(f"http://127.0.0.1:{http}/-/ready", timeout=60, proc=proc)
    return f"127.0.0.1:{grpc}"


def querier(stack: ExitStack, log: Path, endpoints: Sequence[str], *flags: str) -> str:
    """A Thanos Query over the Store API `endpoints`; its URL."""
    http = free_port()
    args = [
        peer("thanos"),
        "query",
        f"--grpc-address=127.0.0.1:{free_port()}",
        f"--http-address=127.0.0.1:{http}",
        *(f"--endpoint={e}" for e in endpoints),
        *flags,
        "--log.level=warn",
    ]
    proc = stack.enter_context(process(args, log))
    url = f"http://127.0.0.1:{http}"
    wait_http(f"{url}/-/ready", timeout=60, proc=proc)
    return url


def cluster_prometheus(
    stack: ExitStack, workdir: Path, targets: tuple[str, str], rules: Path, labels: Mapping[str, str], raw: str = ""
) -> tuple[str, str]:
    """A Prometheus of one cluster (`labels` external) scraping that cluster's exporter (node and cluster role
    URLs `targets`, and the engine's own /metrics at `raw` as job "vllm") with `rules`, behind a sidecar; its
    URL and the sidecar's Store API address."""
    scrape = scrape_jobs(*targets) + ([static_job("vllm", [raw])] if raw else [])
    url = stack.enter_context(prometheus(workdir, scrape, rule_files=[rules], external_labels=labels))
    return url, sidecar(stack, workdir, url, workdir.name)


@contextmanager
def stores(tmp: Path) -> Iterator[dict[str, Any]]:
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
            proms, endpoints, targets = {}, [], {}
            for name, engine in engines.items():
                exporter, url = serve_exporter(
                    tmp, f"node-{name}", "node", f"127.0.0.1:{free_port()}", node_config(engine)
                )
                wait_http(f"{url}/readyz", proc=stack.enter_context(exporter))
                role, role_url = serve_exporter(
                    tmp, f"cluster-{name}", "cluster", f"127.0.0.1:{free_port()}", {}, str(kube.admin_kubeconfig)
                )
                wait_http(f"{role_url}/readyz", timeout=60, proc=stack.enter_context(role))
                targets[name] = (url, role_url)
                raw = engine.url if name == "a" else ""
                proms[name], endpoint = cluster_prometheus(
                    stack, tmp / f"prom-{name}", targets[name], single, {LABEL: name}, raw
                )
                endpoints.append(endpoint)
            query_url = querier(stack, tmp / "query.log", endpoints, "--query.replica-label=replica")
            rule_grpc, rule_http = free_port(), free_port()
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
            recorded_url = querier(
                stack, tmp / "query-recorded.log", [f"127.0.0.1:{rule_grpc}"], "--query.replica-label=replica"
            )
            yield {
                "query": query_url,
                "ruler": ruler_url,
                "recorded": recorded_url,
                "prometheus": proms,
                "endpoints": endpoints,
                "targets": targets,  # cluster -> (node role URL, cluster role URL)
                "single": single,  # the single-cluster rule file each cluster's Prometheus loads
                "kube": kube,
                "tmp": tmp,
            }
    finally:
        for engine in engines.values():
            engine.close()
