"""The command line on bad input, JSON output and --fix/--write, against a real Prometheus 3.

Bad input: broken JSON and YAML, a file of nothing `check` knows, a PromQL syntax error, an unreachable
Prometheus and one that answers 401 (basic auth from its own web config file): each a clear message naming
what is bad, exit 2, and the other files still checked.
"""

from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import yaml

from exporter.check import cli
from exporter.demo.vllm_env import free_port
from tests.bundle.servers import Served, process, prometheus, query, static_job, wait_for
from tests.peers import peer

BODY = 'vllm:kv_cache_usage_perc{model_name="m"} 0.5\nvllm:num_requests_waiting{model_name="m"} 1\n'


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    target = Served(lambda path: (200, BODY))
    try:
        with prometheus(tmp_path_factory.mktemp("prom"), [static_job("target", [target.url])]) as url:
            wait_for(lambda: bool(query(url, "vllm:kv_cache_usage_perc")), 30, "the first scrape")
            yield url
    finally:
        target.close()


def dashboard(*exprs: str) -> dict[str, object]:
    return {
        "templating": {"list": [{"name": "model", "type": "query", "query": "label_values(model_name)"}]},
        "panels": [{"title": f"p{i}", "targets": [{"refId": "A", "expr": e}]} for i, e in enumerate(exprs)],
    }


def run(capsys: pytest.CaptureFixture[str], prom: str, *args: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    capsys.readouterr()
    code = cli.run(parser.parse_args(["--prometheus", prom, *args]))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_bad_files_are_named_and_the_others_still_checked(
    prom: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken.json").write_text('{"panels": [')
    (tmp_path / "broken.yaml").write_text("groups: [\n")
    (tmp_path / "deployment.yaml").write_text(yaml.safe_dump({"kind": "Deployment", "spec": {}}))
    (tmp_path / "syntax.json").write_text(json.dumps(dashboard("sum(vllm:kv_cache_usage_perc")))
    (tmp_path / "good.json").write_text(json.dumps(dashboard('vllm:kv_cache_usage_perc{model_name="$model"}')))
    files = [str(tmp_path / n) for n in ("broken.json", "broken.yaml", "deployment.yaml", "syntax.json", "good.json")]
    code, out, _ = run(capsys, prom, "--output", "json", *files)
    assert code == 2
    report = json.loads(out)
    assert [e.split(":")[0] for e in report["errors"]] == files[:3]
    assert "not valid JSON" in report["errors"][0] and "not valid YAML" in report["errors"][1]
    assert "not a Grafana dashboard" in report["errors"][2]
    by_file = {Path(r["file"]).name: r for r in report["results"]}
    assert by_file["good.json"]["status"] == "ok"
    assert by_file["good.json"]["expr"] == 'vllm:kv_cache_usage_perc{model_name="m"}'
    assert by_file["syntax.json"]["status"] == "error"
    assert set(by_file["syntax.json"]) == {"file", "location", "expr", "status", "reasons", "fix", "rules"}


def test_unreachable_prometheus_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d.json").write_text(json.dumps(dashboard("up")))
    code, _, err = run(capsys, "http://127.0.0.1:9", str(tmp_path / "d.json"))
    assert code == 2
    assert "cannot reach http://127.0.0.1:9" in err


def test_prometheus_answering_401_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hashed = bcrypt.hashpw(b"secret", bcrypt.gensalt(rounds=4)).decode()
    (tmp_path / "web.yml").write_text(yaml.safe_dump({"basic_auth_users": {"admin": hashed}}))
    (tmp_path / "prometheus.yml").write_text("global: {}\n")
    (tmp_path / "d.json").write_text(json.dumps(dashboard("up")))
    port = free_port()
    args = [
        peer("prometheus"),
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--web.config.file={tmp_path / 'web.yml'}",
    ]
    with process(args, tmp_path / "prometheus.log"):
        wait_for(lambda: _listening(port), 30, "Prometheus to listen")
        code, _, err = run(capsys, f"http://127.0.0.1:{port}", str(tmp_path / "d.json"))
    assert code == 2
    assert "401" in err and f"http://127.0.0.1:{port}" in err


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_fix_prints_and_write_rewrites_keeping_formatting(
    prom: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "d.json"
    text = json.dumps(
        dashboard('vllm:gpu_cache_usage_perc{model_name="$model"}', "vllm:num_requests_waiting"), indent=3
    )
    board.write_text(text)
    rules = tmp_path / "keda.yaml"
    rules.write_text(
        "# scale on the KV cache\nkind: ScaledObject\nmetadata: {name: s}\nspec:\n  minReplicaCount: 1\n  triggers:\n"
        "  - type: prometheus  # the only trigger\n    metadata:\n      query: max(vllm:gpu_cache_usage_perc)\n"
    )
    code, out, _ = run(capsys, prom, "--fix", str(board), str(rules))
    assert code == 1
    assert '      fix: vllm:kv_cache_usage_perc{model_name="$model"}' in out.splitlines()
    assert "      fix: max(vllm:kv_cache_usage_perc)" in out.splitlines()
    assert board.read_text() == text  # --fix alone writes nothing
    code, _, _ = run(capsys, prom, "--write", str(board), str(rules))
    assert code == 1  # the run that found them still reports them
    assert board.read_text() == text.replace("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc")
    assert rules.read_text().startswith("# scale on the KV cache\n")
    assert "  - type: prometheus  # the only trigger\n" in rules.read_text()
    assert run(capsys, prom, str(board), str(rules))[0] == 0
