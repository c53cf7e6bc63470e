"""The measured context per workload, evaluated by Prometheus' own engine (promtool): the p99 of the length
histograms where the engines export them, the mean per finished request where they do not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from exporter.audit.measured import tokens_per_request
from tests.bundle.servers import PROMTOOL

POD_INFO = [
    {"series": 'llm_replica_pod_info{namespace="demo", pod="chat-0", workload="chat"}', "values": "1x20"},
    {"series": 'llm_replica_pod_info{namespace="demo", pod="old-0", workload="old"}', "values": "1x20"},
]
# chat-0: 60 requests a minute, every prompt between 100 and 1000 tokens, every answer between 10 and 100
HISTOGRAMS = [
    {"series": f'llm_request_{kind}_tokens_bucket{{namespace="demo", pod="chat-0", model="m", le="{le}"}}',
     "values": values}
    for kind, bounds in (("prompt", ("100", "1000")), ("generation", ("10", "100")))
    for le, values in ((bounds[0], "0x20"), (bounds[1], "0+60x20"), ("+Inf", "0+60x20"))
]  # fmt: skip
# old-0 (an engine without the histograms): 600 prompt and 60 generated tokens a minute over 6 requests
COUNTERS = [
    {"series": 'llm_prompt_tokens_total{namespace="demo", pod="old-0", model="m"}', "values": "0+600x20"},
    {"series": 'llm_generation_tokens_total{namespace="demo", pod="old-0", model="m"}', "values": "0+60x20"},
    {"series": 'llm_requests_finished_total{namespace="demo", pod="old-0", model="m", finished_reason="stop"}',
     "values": "0+6x20"},
]  # fmt: skip


def test_context_used_is_the_p99_of_the_length_histograms_else_the_mean(tmp_path: Path) -> None:
    (tmp_path / "empty.rules.yaml").write_text("groups: []\n")
    case = {
        "rule_files": ["empty.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": POD_INFO + HISTOGRAMS + COUNTERS,
                "promql_expr_test": [
                    {
                        "expr": tokens_per_request("5m"),
                        "eval_time": "10m",
                        # 100 + 900 × 0.99 and 10 + 90 × 0.99; (10 + 1) tokens/s over 0.1 requests/s
                        "exp_samples": [
                            {"labels": '{namespace="demo", workload="chat"}', "value": 1090.1},
                            {"labels": '{namespace="demo", workload="old"}', "value": 110},
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
