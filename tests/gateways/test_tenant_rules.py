"""The tenant recording rules over what the exporter exposes for the real LiteLLM body: the series the
collector writes (its labels, its tenant="other") are the ones the rules join, checked by the real promtool."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from tests.bundle.servers import PROMTOOL
from tests.gateways.test_gateways import BODY, exposition

RULES = Path(__file__).resolve().parents[2] / "alerts" / "llm-exporter.rules.yaml"
SAMPLE = re.compile(r"^(llm_gateway_tokens_total)\{(.*)\} (\S+)$")
POD = 'job="llm-exporter",namespace="demo",pod="tiny-0",engine="vllm",model="tiny",dp_rank="0"'
PRICE = 0.001  # a second of the one GPU the engine pod holds


def gateway_tokens() -> dict[tuple[str, str], float]:
    """(tenant, direction) -> tokens, as the exporter exposes them for the proxy's body (end users as tenants,
    three named: bo is counted as "other")."""
    out = {}
    for line in exposition(BODY, ["end_user"], 3).splitlines():
        if m := SAMPLE.match(line):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m[2]))
            assert labels["model"] == "tiny"
            out[(labels["tenant"], labels["direction"])] = float(m[3])
    return out


def test_each_tenant_of_the_real_body_gets_its_share_of_the_gpu_and_its_cost(tmp_path: Path) -> None:
    tokens = gateway_tokens()
    assert {t for t, _ in tokens} == {"ada", "alice", "bob", "other"}
    total = {d: sum(v for (_, d2), v in tokens.items() if d2 == d) for d in ("prompt", "generation")}
    # the body's counts as one minute's increase, read by the exporter; the engine counted the same tokens
    series = [
        {
            "series": f'llm_gateway_tokens_total{{gateway="litellm",tenant="{t}",model="tiny",direction="{d}",'
            'instance="node-1:8490",job="llm-exporter"}',
            "values": f"0+{v:g}x70",
        }
        for (t, d), v in sorted(tokens.items())
    ]
    series += [
        {"series": f"llm_prompt_tokens_total{{{POD}}}", "values": f"0+{total['prompt']:g}x70"},
        {"series": f"llm_generation_tokens_total{{{POD}}}", "values": f"0+{total['generation']:g}x70"},
        {"series": f"llm_requests_running{{{POD}}}", "values": "1x70"},
        {
            "series": 'llm_gpu_pod_info{gpu="0",uuid="GPU-t",node="gpu-1",namespace="demo",pod="tiny-0",'
            'container="vllm",instance="gpu-1:8490",job="llm-exporter"}',
            "values": "1x70",
        },
        {
            "series": 'llm_gpu_info{node="gpu-1",gpu="0",uuid="GPU-t",name="NVIDIA L4",driver_version="550.54.15",'
            'mig_mode="disabled",instance="gpu-1:8490",job="llm-exporter"}',
            "values": "1x70",
        },
        {
            "series": 'llm_gpu_price_per_second{name="NVIDIA L4",currency="USD",instance="cluster:8490",'
            'job="llm-exporter"}',
            "values": f"{PRICE}x70",
        },
    ]
    both = total["prompt"] + total["generation"]
    # no phase times (the pod has no prefill or decode histogram): the model's tokens split it
    cost = {
        (t, d): v / total[d] * (total[d] / both) * PRICE for (t, d), v in tokens.items()
    }  # = the tenant's tokens over all tokens of the model
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": "round(1e9 * llm:tenant_cost_per_second)",
                        "eval_time": "65m",
                        "exp_samples": [
                            {
                                "labels": f'{{gateway="litellm",tenant="{t}",model="tiny",direction="{d}",'
                                'currency="USD"}',
                                "value": round(1e9 * c),
                            }
                            for (t, d), c in sorted(cost.items())
                        ],
                    },
                    {
                        "expr": "llm:model_gateway_token_coverage:ratio_rate1h",
                        "eval_time": "65m",
                        "exp_samples": [
                            {"labels": 'llm:model_gateway_token_coverage:ratio_rate1h{model="tiny"}', "value": 1}
                        ],
                    },
                ],
            }
        ],
    }
    path = tmp_path / "tenants.test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    done = subprocess.run(
        [PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # a sanity check of the expectation itself: the tenants' costs add up to the GPU's price
    assert abs(sum(cost.values()) - PRICE) < 1e-12
