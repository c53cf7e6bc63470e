"""engine.model_changed: another revision or image began serving a model within the window. Its query evaluated
by Prometheus' own engine (promtool) over llm_model_info series of a rollout; its judgement over those results."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import yaml

from exporter.diagnose.collect import queries as planned
from exporter.diagnose.limits import DEFAULT
from exporter.diagnose.model import Readings, Sample
from exporter.diagnose.promql import Scope, render
from exporter.diagnose.verdicts import model_changed
from exporter.diagnose.walk import walk
from tests.bundle.servers import PROMTOOL

OLD = "sha256:953d3a06d5e64ab582985cd7401289d3abf2a2c14ef2158e9a84313daeec77d7"
NEW = "sha256:6d8429e38e3747723ca07ee1b17972e09bb9c51c4032b266f24fb1cc3b22ed8f"
COMMON = 'namespace="demo", served_model_name="chat", model="Qwen/Qwen3-8B", image="vllm/vllm-openai:v0.10.1"'


def info(pod: str, revision: str, digest: str) -> str:
    return (
        f'llm_model_info{{{COMMON}, pod="{pod}", revision="{revision}", image_digest="{digest}", engine="vllm", '
        'engine_version="0.10.1"}'
    )


# a rollout: chat-a (revision main) serves from the start; chat-b (a pinned revision and another image) from
# minute 20, and chat-a goes at minute 25; chat-c, a scale-up of chat-b's revision at minute 30, changes nothing
SERIES = [
    {"series": info("chat-a", "main", OLD), "values": "1x25"},
    {"series": info("chat-b", "b968826d9c46dd6066d109eabc6255188de91218", NEW), "values": "_x20 1x40"},
    {"series": info("chat-c", "b968826d9c46dd6066d109eabc6255188de91218", NEW), "values": "_x30 1x20"},
]
QUERY = render(model_changed.queries(DEFAULT)["first_seen"], Scope(namespace="demo", window="1h"))
SINCE = 'namespace="demo", served_model_name="chat", model="Qwen/Qwen3-8B", image="vllm/vllm-openai:v0.10.1"'


def test_the_first_seen_query_in_prometheus(tmp_path: Path) -> None:
    (tmp_path / "empty.rules.yaml").write_text("groups: []\n")
    labels = '{{{}, revision="{}", image_digest="{}"}}'
    case = {
        "rule_files": ["empty.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": SERIES,
                "promql_expr_test": [
                    {
                        "expr": QUERY,
                        "eval_time": "50m",
                        # the window reaches back before the start: each is first seen at its first sample
                        "exp_samples": [
                            {"labels": labels.format(SINCE, "main", OLD), "value": 0},
                            {
                                "labels": labels.format(SINCE, "b968826d9c46dd6066d109eabc6255188de91218", NEW),
                                "value": 20 * 60,
                            },
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "case.yaml").write_text(yaml.safe_dump(case))
    run = subprocess.run(
        [PROMTOOL, "test", "rules", "case.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


def readings(rows: list[tuple[dict[str, str], float]], model: str = "") -> Readings:
    texts = {qid: expr for _, qid, expr in planned(Scope())}
    qid = model_changed.VERDICT.qid("first_seen")
    return Readings(
        "2026-12-05T14:15:00Z", "1h", texts, {qid: tuple(Sample(labels, v) for labels, v in rows)}, DEFAULT, model
    )


BEFORE = {"namespace": "demo", "served_model_name": "chat", "model": "Qwen/Qwen3-8B", "revision": "main",
          "image": "vllm/vllm-openai:v0.10.1", "image_digest": OLD}  # fmt: skip
AFTER = BEFORE | {"revision": "b968826d9c46dd6066d109eabc6255188de91218", "image_digest": NEW}
AT = 1796476800.0  # 2026-12-05T13:20:00Z


def test_a_change_names_the_minute_and_what_changed() -> None:
    (finding,) = model_changed.VERDICT.judge(readings([(BEFORE, AT - 3600), (AFTER, AT)]), [])
    assert finding.verdict == (
        "demo/chat: the model changed at 13:20 UTC (revision main → b968826d9c46dd6066d109eabc6255188de91218, "
        f"image_digest {OLD} → {NEW}): compare latency, errors and answers before and after"
    )
    assert (finding.namespace, finding.model, finding.stage, finding.evidence[0].value) == (
        "demo",
        "chat",
        "engine",
        AT,
    )


def test_a_change_is_put_beside_the_first_minute_of_the_wait() -> None:
    qid = model_changed.VERDICT.qid("wait_start")
    r = readings([(BEFORE, AT - 3600), (AFTER, AT)])
    wait = Sample({"namespace": "demo", "model": "chat"}, AT + 180)
    (finding,) = model_changed.VERDICT.judge(replace(r, results={**r.results, qid: (wait,)}), [])
    assert finding.verdict.startswith(
        "demo/chat: the model changed at 13:20 UTC, 3 min before the wait began at 13:23 UTC ("
    )
    assert [e.value for e in finding.evidence] == [AT, AT + 180]
    # a wait that began before the change: after it; another model's wait: none
    earlier = Sample({"namespace": "demo", "model": "chat"}, AT - 600)
    (after,) = model_changed.VERDICT.judge(replace(r, results={**r.results, qid: (earlier,)}), [])
    assert after.verdict.startswith(
        "demo/chat: the model changed at 13:20 UTC, 10 min after the wait began at 13:10 UTC ("
    )
    other = Sample({"namespace": "demo", "model": "code"}, AT + 180)
    (alone,) = model_changed.VERDICT.judge(replace(r, results={**r.results, qid: (other,)}), [])
    assert alone.verdict.startswith("demo/chat: the model changed at 13:20 UTC (")


def test_the_wait_start_query_in_prometheus(tmp_path: Path) -> None:
    """The queue of demo/chat goes above 5 at minute 23 (two replicas, 3 and 4 waiting); code never waits."""
    (tmp_path / "empty.rules.yaml").write_text("groups: []\n")
    waiting = 'llm_requests_waiting{{namespace="demo", pod="{}", engine="vllm", model="{}", dp_rank="0"}}'
    case = {
        "rule_files": ["empty.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": waiting.format("chat-b", "chat"), "values": "0x22 3x20"},
                    {"series": waiting.format("chat-c", "chat"), "values": "1x22 4x20"},
                    {"series": waiting.format("code-a", "code"), "values": "2x42"},
                ],
                "promql_expr_test": [
                    {
                        "expr": render(
                            model_changed.queries(DEFAULT)["wait_start"], Scope(namespace="demo", window="30m")
                        ),
                        "eval_time": "40m",
                        "exp_samples": [{"labels": '{namespace="demo", model="chat"}', "value": 23 * 60}],
                    }
                ],
            }
        ],
    }
    (tmp_path / "case.yaml").write_text(yaml.safe_dump(case))
    run = subprocess.run(
        [PROMTOOL, "test", "rules", "case.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_one_revision_or_two_since_before_the_window_is_no_change() -> None:
    assert model_changed.VERDICT.judge(readings([(BEFORE, AT)]), []) == []
    assert model_changed.VERDICT.judge(readings([(BEFORE, AT), (AFTER, AT)]), []) == []


def test_the_walk_of_another_model_leaves_it_out() -> None:
    assert model_changed.VERDICT.judge(readings([(BEFORE, AT - 60), (AFTER, AT)], model="other"), []) == []


def test_in_a_walk_it_is_context_beside_the_unexplained_wait() -> None:
    """Users of demo/chat wait and nothing explains it: the change is reported, and so is the wait."""
    chat = {"namespace": "demo", "model": "chat"}
    results: dict[str, list[tuple[dict[str, str], float]]] = {
        "scope.namespaces": [({"namespace": "demo"}, 1)],
        "scope.targets": [({}, 2)],
        "waiting.unexplained.models": [(chat, 1)],
        "waiting.unexplained.ttft_p99": [(chat, 4.0)],
        "waiting.unexplained.queue_share": [(chat, 0.1)],
        model_changed.VERDICT.qid("first_seen"): [(BEFORE, AT - 3600), (AFTER, AT)],
    }
    texts = {qid: expr for _, qid, expr in planned(Scope())}
    samples = {qid: tuple(Sample(labels, v) for labels, v in rows) for qid, rows in results.items()}
    report = walk(Readings("2026-12-05T14:15:00Z", "1h", texts, samples, DEFAULT), "2026-12-05T13:15:00Z")
    assert [(f.verdict_id, f.model) for f in report.findings] == [
        ("engine.model_changed", "chat"),
        ("waiting.unexplained", "chat"),
    ]
