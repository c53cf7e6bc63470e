"""The overview's "Model changed" annotation: its query evaluated by Prometheus' own engine (promtool) over the
llm_model_info series of a rollout, as the rendered dashboard holds it, and the same labels as diagnose's
engine.model_changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from dashboards import overview_annotations
from exporter.diagnose.verdicts import model_changed
from tests.bundle.servers import PROMTOOL

ROOT = Path(__file__).resolve().parents[2]
OLD = "sha256:953d3a06d5e64ab582985cd7401289d3abf2a2c14ef2158e9a84313daeec77d7"
NEW = "sha256:6d8429e38e3747723ca07ee1b17972e09bb9c51c4032b266f24fb1cc3b22ed8f"
REV = "b968826d9c46dd6066d109eabc6255188de91218"


def info(pod: str, revision: str, digest: str, name: str = "chat") -> str:
    return (
        f'llm_model_info{{namespace="demo", served_model_name="{name}", model="Qwen/Qwen3-8B", '
        f'image="vllm/vllm-openai:v0.10.1", pod="{pod}", revision="{revision}", image_digest="{digest}", '
        'engine="vllm", engine_version="0.10.1"}'
    )


# chat: chat-a (main) from the start, chat-b (another revision and digest) from minute 20, chat-a gone at 25,
# chat-c (chat-b's revision) from minute 30; code: first rolled out at minute 10 (no change: nothing served it)
SERIES = [
    {"series": info("chat-a", "main", OLD), "values": "1x25"},
    {"series": info("chat-b", REV, NEW), "values": "_x20 1x40"},
    {"series": info("chat-c", REV, NEW), "values": "_x30 1x30"},
    {"series": info("code-a", "main", OLD, "code"), "values": "_x10 1x50"},
]
CHANGED = (
    f'{{namespace="demo", served_model_name="chat", model="Qwen/Qwen3-8B", revision="{REV}", '
    f'image="vllm/vllm-openai:v0.10.1", image_digest="{NEW}"}}'
)


def test_the_rendered_dashboard_holds_the_annotation() -> None:
    dashboard = json.loads((ROOT / "dashboards/overview.json").read_text())
    (annotation,) = dashboard["annotations"]["list"]
    assert (annotation["name"], annotation["expr"]) == ("Model changed", overview_annotations.MODEL_CHANGED)
    assert annotation["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_the_labels_are_diagnoses() -> None:
    assert overview_annotations.WHAT.split(", ") == [
        *model_changed.SERVED[:1],
        "served_model_name",
        *model_changed.WHAT,
    ]


def test_a_new_revision_is_marked_for_5_minutes_and_nothing_else(tmp_path: Path) -> None:
    expr = overview_annotations.MODEL_CHANGED.replace('namespace=~"$namespace"', 'namespace=~".*"')
    (tmp_path / "empty.rules.yaml").write_text("groups: []\n")
    evaluations = [
        # before chat-b: nothing; the first rollout of code at minute 10: nothing
        ("19m", []),
        ("12m", []),
        # chat-b's revision from minute 20 to 24 (5 minutes after its first sample)
        ("20m", [{"labels": CHANGED, "value": 1}]),
        ("24m", [{"labels": CHANGED, "value": 1}]),
        ("25m", []),
        # chat-c at 30, chat-a's end at 25: the revision that serves did not change
        ("32m", []),
    ]
    case = {
        "rule_files": ["empty.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": SERIES,
                "promql_expr_test": [
                    {"expr": expr, "eval_time": at, "exp_samples": samples} for at, samples in evaluations
                ],
            }
        ],
    }
    (tmp_path / "case.yaml").write_text(yaml.safe_dump(case))
    run = subprocess.run(
        [PROMTOOL, "test", "rules", "case.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
