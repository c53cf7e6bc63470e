"""diagnose against the real Prometheus 3 with the bundle's rules loaded: each failure mode of the write-ups on
its own yields exactly its verdict, ranked first; the healthy baseline none; the complete example its
conclusions in the write-ups' order; missing telemetry exit 2 naming what is missing; bad input a clear error."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import jsonschema
import pytest
import yaml

from exporter.cli import main
from exporter.demo.vllm_env import free_port
from exporter.diagnose.collect import read, rfc3339
from exporter.diagnose.promql import Scope
from exporter.diagnose.walk import Report, walk
from exporter.sources.prometheus import HttpPrometheus
from tests import golden
from tests.bundle.servers import PROMETHEUS, process
from tests.diagnose import scenarios
from tests.diagnose.replay import replayed

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "exporter/diagnose/schema.json").read_text())
GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with replayed(scenarios.everything(), tmp_path_factory.mktemp("prometheus")) as url:
        yield url


def report(url: str, namespace: str, window: str = "15m") -> Report:
    at = time.time()
    readings = read(HttpPrometheus(url), Scope(namespace, "", window), at)
    return walk(readings, rfc3339(at - 900), namespace)


def diagnose(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diagnose", *args])
    out, err = capsys.readouterr()
    return code, out, err


def ids(r: Report) -> list[str]:
    return [f.verdict_id for f in r.findings]


@pytest.mark.parametrize("namespace", sorted(scenarios.FAILURE_MODES))
def test_each_failure_mode_yields_exactly_its_verdict(cluster: str, namespace: str) -> None:
    expected = scenarios.FAILURE_MODES[namespace][1]
    r = report(cluster, namespace)
    assert r.status == "findings", r
    assert ids(r) == [expected], [f.verdict for f in r.findings]
    assert r.telemetry == ()


def test_the_verdicts_say_what_the_write_ups_say(cluster: str) -> None:
    verdicts = {ns: report(cluster, ns).findings[0] for ns in scenarios.FAILURE_MODES}
    assert verdicts["routing"].verdict.startswith("routing/vllm-0 holds 100 % of llama's queue (9 of 9 waiting)")
    assert verdicts["maxed"].verdict.startswith("autoscaler vllm (hpa) of maxed/vllm is at its maximum of 2")
    assert "returns nothing (renamed): KEDA reads 0 and holds vllm at 1 replica(s) (its minimum is 1)" in (
        verdicts["keda"].verdict
    )
    assert verdicts["placement"].verdict == (
        "placement/vllm-1 is Pending: 4 nvidia.com/gpu on one node needed; 6 free as 2/2/1/1 on 4 node(s); "
        "not usable: gpu-e (4 free, cordoned)"
    )
    # rate() over a 15m window holding a minute of samples reads low: the preemptions are there, not their rate
    assert re.fullmatch(
        r"kv/llama is bound by KV capacity for 100 % of the window \(KV cache up to 97 % full, [0-9.]+ "
        r"preemptions/s\): requests wait for cache blocks",
        verdicts["kv"].verdict,
    ), verdicts["kv"].verdict
    assert re.search(r"take 119 s \(p99\) but Ingress ingress/vllm cuts them at 60 s", verdicts["ingress"].verdict)
    owners = {ns: f.owner for ns, f in verdicts.items()}
    assert owners == {n: "platform" for n in scenarios.FAILURE_MODES} | {"kv": "application"}


def test_healthy_baseline_yields_none(cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    r = report(cluster, "healthy")
    assert (r.status, r.findings, r.waits) == ("healthy", (), ())
    code, out, _ = diagnose(capsys, "--prometheus", cluster, "--namespace", "healthy")
    assert code == 0
    assert out.startswith("llm-exporter diagnose: healthy: nobody waits (namespace healthy, 15m up to ")


def test_the_tenant_that_sends_most_of_a_queue_is_named(cluster: str) -> None:
    # one replica busy on every request: compute explains the queue, and the tenant is named beside it
    r = report(cluster, "tenants")
    assert ids(r) == ["engine.compute", "waiting.tenant"], [f.verdict for f in r.findings]
    assert r.findings[1].verdict == (
        "tenants/chat queues and tenant team-a sent 70 % of its tokens through the gateway over the window "
        "(prompt and generated)"
    )


def test_complete_example_yields_the_conclusions_in_order(cluster: str) -> None:
    r = report(cluster, "incident")
    assert ids(r) == scenarios.INCIDENT_ORDER
    assert [w.reasons for w in r.waits] == [("first token", "queue", "answers cut")]


def test_renamed_engine_metric_cannot_tell(cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = diagnose(capsys, "--prometheus", cluster, "--namespace", "renamed", "--output", "json")
    body = json.loads(out)
    jsonschema.validate(body, SCHEMA)
    assert code == 2 and body["status"] == "unknown"
    assert [p["problem"] for p in body["telemetry"]] == [
        "llm_requests_waiting is missing on renamed/vllm-0: vllm 0.11.0 does not expose vllm:num_requests_waiting "
        "(renamed or hidden), so every panel, alert and autoscaler on it reads nothing"
    ]
    assert body["findings"][0]["stage"] == "telemetry"


@pytest.mark.parametrize("namespace", ["healthy", "incident", *sorted(scenarios.FAILURE_MODES)])
def test_json_output_follows_the_schema(cluster: str, capsys: pytest.CaptureFixture[str], namespace: str) -> None:
    code, out, _ = diagnose(capsys, "--prometheus", cluster, "--namespace", namespace, "--output", "json")
    body = json.loads(out)
    jsonschema.validate(body, SCHEMA)
    assert code == {"healthy": 0, "findings": 1}[body["status"]]
    assert len(body["findings"]) == (0 if namespace == "healthy" else 3 if namespace == "incident" else 1)


def _normalised(text: str) -> str:
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<TIME>", text)
    return re.sub(r"(from|to)=\d+", r"\1=<MS>", text)


@pytest.mark.parametrize("namespace", ["routing", "incident"])
@pytest.mark.parametrize("output", ["text", "markdown"])
def test_golden_outputs(cluster: str, capsys: pytest.CaptureFixture[str], namespace: str, output: str) -> None:
    args = ["--prometheus", cluster, "--namespace", namespace, "--output", output]
    if output == "markdown":
        args += ["--grafana-url", "https://grafana.example.com"]
    code, out, _ = diagnose(capsys, *args)
    assert code == 1
    got = _normalised(out).replace(cluster, "PROMETHEUS")
    golden.check(GOLDEN / f"{namespace}.{'md' if output == 'markdown' else 'txt'}", got)


def test_unknown_namespace_and_model(cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = diagnose(capsys, "--prometheus", cluster, "--namespace", "nope")
    assert (code, out) == (2, "")
    assert "namespace 'nope' has no engine series (llm_engine_info) in the 15m up to" in err
    assert "namespaces with engines: healthy, incident, ingress, keda, kv, maxed, placement, renamed, routing" in err
    code, out, err = diagnose(capsys, "--prometheus", cluster, "--namespace", "routing", "--model", "gpt-9")
    assert (code, out) == (2, "")
    assert "model 'gpt-9' has no engine series (llm_requests_running)" in err and "models: llama" in err


def test_empty_window(cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = diagnose(capsys, "--prometheus", cluster, "--at", rfc3339(time.time() - 86400))
    assert (code, out) == (2, "")
    assert "no engine series (llm_engine_info) in the 15m up to" in err and "the window is empty" in err
    for flags, message in (
        (["--window", "0m"], "--window '0m': a positive Prometheus duration"),
        (["--at", "yesterday"], "--at 'yesterday': not RFC 3339"),
    ):
        code, out, err = diagnose(capsys, "--prometheus", cluster, *flags)
        assert (code, out) == (2, "") and message in err


def test_unreachable_prometheus(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = diagnose(capsys, "--prometheus", url)
    assert (code, out) == (2, "")
    assert f"cannot reach {url}: " in err
    code, out, err = diagnose(capsys, "--prometheus", "prometheus:9090")
    assert (code, out, err) == (2, "", "llm-exporter diagnose: 'prometheus:9090' is not an http(s) URL\n")


def test_unauthorized(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Prometheus behind its own basic auth (web config) refuses a bearer token with 401."""
    hashed = bcrypt.hashpw(b"secret", bcrypt.gensalt(rounds=4)).decode()
    (tmp_path / "web.yml").write_text(yaml.safe_dump({"basic_auth_users": {"admin": hashed}}))
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({"scrape_configs": []}))
    (tmp_path / "token").write_text("not-the-password\n")
    port = free_port()
    args = [
        PROMETHEUS,
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--web.config.file={tmp_path / 'web.yml'}",
        "--log.level=warn",
    ]
    url = f"http://127.0.0.1:{port}"
    with process(args, tmp_path / "prometheus.log") as proc:
        _wait_listening(port, proc)
        code, out, err = diagnose(capsys, "--prometheus", url, "--bearer-token-file", str(tmp_path / "token"))
    assert (code, out) == (2, "")
    assert err == (
        f"llm-exporter diagnose: {url} answered 401 Unauthorized: give a valid token with --bearer-token-file\n"
    )


def _wait_listening(port: int, proc: object) -> None:
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("Prometheus did not listen")


def test_exporter_down_cannot_tell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One node's exporter is down: the healthy namespace is no clean bill, the target is named."""
    down = f"127.0.0.1:{free_port()}"
    world = scenarios.healthy()
    with replayed(world, tmp_path, (down,)) as url:
        code, out, _ = diagnose(capsys, "--prometheus", url, "--namespace", "healthy", "--output", "json")
    body = json.loads(out)
    jsonschema.validate(body, SCHEMA)
    assert (code, body["status"]) == (2, "unknown")
    assert [p["problem"] for p in body["telemetry"]] == [
        f"exporter target {down} is down: the engines, GPUs or cluster view it reports are missing from every "
        "later stage"
    ]


def test_stale_cluster_view_cannot_tell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    world = scenarios.healthy()
    world.cluster_view_age = 3600
    with replayed(world, tmp_path) as url:
        code, out, _ = diagnose(capsys, "--prometheus", url, "--namespace", "healthy")
    assert code == 2
    assert out.startswith("llm-exporter diagnose: the telemetry cannot tell: 1 problem to fix first")
    assert re.search(r"the cluster view of 127\.0\.0\.1:\d+ is 36\d\d s old", out), out
