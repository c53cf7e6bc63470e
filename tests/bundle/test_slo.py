"""The SLO objects of deploy/slo/: Sloth 0.16.0 (tools/peers/sloth) validates the specs and generates from them
rules whose SLI is the bundle's own (the error ratio of its llm-inference.slo recording rules, for the engine) with
the bundle's objective and burn-rate windows; the Pyrra objects fit Pyrra's CRD; a threshold between bucket bounds
is rounded down with a note; an engine without the histogram is refused with the reason."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from alerts import formats
from alerts.groups.engine import alerts as engine_alerts
from alerts.recordings.slo import slo_windows
from alerts.thresholds import DEFAULT, Thresholds
from exporter.bundle import render, shipped, slo, slo_indicators
from exporter.catalogue import engine as m
from exporter.engines.registry import ENGINES
from tests.deploy import crd_schemas
from tests.peers import peer

ROOT = render.ROOT
SLO = ROOT / slo.FOLDER
PYRRA_CRD = ROOT / "tests/fixtures/pyrra/pyrra.dev_servicelevelobjectives.json"
BUCKETS = slo_indicators.load_buckets(ROOT)
ENGINE_LIST = list(ENGINES.values())
# Sloth's alert condition: `max(slo:sli_error:ratio_rate<window>{...} > (<factor> * <budget>)) without (sloth_window)`
_SLOTH_PAIR = re.compile(r"slo:sli_error:ratio_rate(\w+)\{[^}]*\} > \(([\d.]+) \* ([\d.]+)\)")
_BUNDLE_PAIR = re.compile(r"llm:ttft_slo_error_ratio:rate(\w+) > ([\d.]+)")


def _sloth(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([peer("sloth"), *args, "--no-log"], capture_output=True, text=True, check=False)


def _generated(spec: Path) -> dict[str, Any]:
    done = _sloth("generate", "-i", str(spec))
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = yaml.safe_load(done.stdout)
    return out


def _bundle_rules() -> dict[str, str]:
    data = yaml.safe_load((ROOT / "alerts/llm-exporter.rules.yaml").read_text(encoding="utf-8"))
    return {r.get("record") or r["alert"]: r["expr"] for g in data["groups"] for r in g["rules"]}


def _rules(generated: dict[str, Any], slo_name: str) -> list[dict[str, Any]]:
    return [r for g in generated["groups"] if g["name"].endswith(f"-{slo_name}") for r in g["rules"]]


def test_sloth_validates_every_spec() -> None:
    done = _sloth("validate", "-i", str(SLO / "sloth"))
    assert done.returncode == 0, done.stderr + done.stdout
    assert sorted(p.name for p in (SLO / "sloth").glob("*.yaml")) == [
        "lmdeploy.yaml",
        "sglang.yaml",
        "trtllm.yaml",
        "vllm.yaml",
    ]


def test_sloth_refuses_a_broken_spec(tmp_path: Path) -> None:
    """The validation is real: the same spec with an objective over 100 fails."""
    spec = yaml.safe_load((SLO / "sloth/vllm.yaml").read_text(encoding="utf-8"))
    spec["slos"][0]["objective"] = 120
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert _sloth("validate", "-i", str(tmp_path)).returncode != 0


def test_sloth_rules_are_the_bundle_slo_for_vllm() -> None:
    """Same error ratio expression (the bundle's recording rule, with the engine matcher), same windows, same
    objective, same burn-rate pairs (long, short, factor × budget, severity) as LLMTimeToFirstTokenBudgetBurn*."""
    generated = _generated(SLO / "sloth/vllm.yaml")
    rules = _rules(generated, "time-to-first-token")
    bundle = _bundle_rules()
    ratios = {
        r["labels"]["sloth_window"]: r["expr"]
        for r in rules
        if r.get("record") == "slo:sli_error:ratio_rate" + r["labels"].get("sloth_window", "")
    }
    assert set(slo_windows(DEFAULT)) <= set(ratios)
    # the bundle's rule also reads the bound below for models without a 2.5 bucket (SGLang's): vLLM has one, so
    # its share of the rule is the expression without the fallback
    single = dataclasses.replace(DEFAULT, ttft_slo_fallback_seconds=())
    for window in slo_windows(DEFAULT):
        ours = render_rule(single, f"llm:ttft_slo_error_ratio:rate{window}").replace(
            'job="llm-exporter"', 'job="llm-exporter", engine="vllm"'
        )
        assert ratios[window] == f"({ours})"
        first_bound = render_rule(single, f"llm:ttft_slo_error_ratio:rate{window}").split(" / ")[0].removeprefix("1 - ")
        assert bundle[f"llm:ttft_slo_error_ratio:rate{window}"].startswith(f"1 - ({first_bound} or ")
    objective = next(r["expr"] for r in rules if r.get("record") == "slo:objective:ratio")
    assert objective == f"vector({DEFAULT.ttft_slo_objective})"
    sloth_pairs: set[tuple[str, float, str]] = set()
    for r in rules:
        if "alert" in r:
            windows = [(w, round(float(f) * float(b), 6)) for w, f, b in _SLOTH_PAIR.findall(r["expr"])]
            assert len(windows) % 2 == 0 and windows
            sloth_pairs.update((w, v, r["labels"]["severity"]) for w, v in windows)
    bundle_pairs: set[tuple[str, float, str]] = set()
    for name, severity in (
        ("LLMTimeToFirstTokenBudgetBurn", "critical"),
        ("LLMTimeToFirstTokenBudgetBurnSlow", "warning"),
    ):
        bundle_pairs.update((w, float(v), severity) for w, v in _BUNDLE_PAIR.findall(bundle[name]))
    assert sloth_pairs == bundle_pairs
    assert len(bundle_pairs) == 2 * len(DEFAULT.ttft_burn_rates)


def test_sloth_rules_of_a_rounded_objective_read_the_bound_below() -> None:
    """SGLang's buckets have no 2.5: its objective reads le="2.0", the bundle's expression at that bound."""
    rules = _rules(_generated(SLO / "sloth/sglang.yaml"), "time-to-first-token")
    bundle = render_rule(dataclasses.replace(DEFAULT, ttft_slo_seconds=2.0), "llm:ttft_slo_error_ratio:rate1h")
    ours = bundle.replace('job="llm-exporter"', 'job="llm-exporter", engine="sglang"')
    assert next(r["expr"] for r in rules if r["labels"].get("sloth_window") == "1h" and "record" in r) == f"({ours})"
    text = (SLO / "sloth/sglang.yaml").read_text(encoding="utf-8")
    assert "# ttft: 2.5s is not a bucket bound of sglang:time_to_first_token_seconds" in text
    assert "measured at 2s (stricter)" in yaml.safe_load(text.split("\n", 1)[1])["slos"][0]["description"]


def test_the_bundle_reads_each_engines_bound_at_or_below_the_objective() -> None:
    """Every engine with a first-token histogram has the objective's bound or one of the fallbacks, the nearest
    below it: no engine's burn-rate alerts read nothing, none reads a coarser bound than it has."""
    seen = set()
    for engine, histograms in BUCKETS.items():
        ttft = histograms.get(m.TIME_TO_FIRST_TOKEN.name) if isinstance(histograms, dict) else None
        if ttft is None:
            continue
        below = max(b for b in ttft["bounds"] if b <= DEFAULT.ttft_slo_seconds)
        if below != DEFAULT.ttft_slo_seconds:
            assert below in DEFAULT.ttft_slo_fallback_seconds, engine
            seen.add(float(below))
    assert seen == set(DEFAULT.ttft_slo_fallback_seconds)


def render_rule(t: Any, name: str) -> str:
    return str(next(r["expr"] for g in formats.rule_groups(t) for r in g["rules"] if r.get("record") == name))


@pytest.mark.parametrize("path", sorted((SLO / "pyrra").glob("*.yaml")), ids=lambda p: p.name)
def test_pyrra_objects_fit_the_crd(path: Path) -> None:
    schema = crd_schemas.schemas_of(json.loads(PYRRA_CRD.read_text(encoding="utf-8")))[
        ("pyrra.dev/v1alpha1", "ServiceLevelObjective")
    ]
    objects = slo.objects(path.read_text(encoding="utf-8"))
    assert objects
    for obj in objects:
        jsonschema.validate(obj, schema)
    broken = {**objects[0], "spec": {**objects[0]["spec"], "indicator": {"latency": {"total": {"metric": "x"}}}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_pyrra_objects_describe_the_same_sli() -> None:
    (ttft, itl, errors) = slo.objects((SLO / "pyrra/vllm.yaml").read_text(encoding="utf-8"))
    latency = ttft["spec"]["indicator"]["latency"]
    assert (
        latency["success"]["metric"]
        == 'llm_time_to_first_token_seconds_bucket{job="llm-exporter", engine="vllm", le="2.5"}'
    )
    assert latency["total"]["metric"] == 'llm_time_to_first_token_seconds_count{job="llm-exporter", engine="vllm"}'
    assert latency["grouping"] == ["namespace", "model"]
    assert (ttft["spec"]["target"], ttft["spec"]["window"]) == ("99", "30d")
    assert itl["spec"]["indicator"]["latency"]["success"]["metric"].endswith('le="0.2"}')
    assert errors["spec"]["indicator"]["ratio"]["errors"]["metric"].endswith('finished_reason=~"abort|error"}')
    assert errors["spec"]["target"] == "99.9"


def _indicator(engine: str, sli: str, t: Any = DEFAULT) -> slo_indicators.Indicator:
    return next(i for i in slo.indicators(t, [ENGINES[engine]], BUCKETS) if i.sli == sli)


def test_engines_without_the_histogram_are_refused_with_the_reason() -> None:
    assert (
        _indicator("tgi", "ttft").refused
        == "no llm_time_to_first_token_seconds source: TGI exposes no time to first token"
    )
    assert _indicator("llamacpp", "itl").refused.startswith("no llm_inter_token_latency_seconds source")
    assert "not recorded" in _indicator("trtllm", "ttft").refused
    assert "no finished_reason" in _indicator("tgi", "errors").refused
    readme = (SLO / "README.md").read_text(encoding="utf-8")
    assert "| TGI | time-to-first-token | refused | | no llm_time_to_first_token_seconds source" in readme
    assert not (SLO / "sloth/tgi.yaml").exists() and not (SLO / "sloth/llamacpp.yaml").exists()


def test_thresholds_between_bounds_round_down_with_a_note_and_below_all_are_refused() -> None:
    on = _indicator("vllm", "itl")
    assert (on.bound, on.note) == (0.2, "")
    between = _indicator("vllm", "itl", dataclasses.replace(DEFAULT, itl_slo_seconds=0.22))
    assert between.bound == 0.2
    assert between.note.startswith("0.22s is not a bucket bound of vllm:time_per_output_token_seconds")
    assert "between 0.2s and 0.3s" in between.note
    below = _indicator("sglang", "ttft", dataclasses.replace(DEFAULT, ttft_slo_seconds=0.05))
    assert below.refused.startswith("0.05s is below the lowest bucket bound 0.1s")
    files = slo.files(dataclasses.replace(DEFAULT, itl_slo_seconds=0.22), ENGINE_LIST, BUCKETS)
    assert "# itl: 0.22s is not a bucket bound" in files["deploy/slo/sloth/vllm.yaml"]


def test_render_slo_out_writes_the_objects_from_a_checkout_and_from_the_package(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    render.add_arguments(parser)
    assert render.run(parser.parse_args(["--slo", "--out", str(tmp_path / "out")])) == 0
    written = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "out").iterdir()}
    assert written["sloth-vllm.yaml"] == (SLO / "sloth/vllm.yaml").read_text(encoding="utf-8")
    assert written["pyrra-sglang.yaml"] == (SLO / "pyrra/sglang.yaml").read_text(encoding="utf-8")
    assert written == shipped.slo_files()  # what an installed exporter writes
    assert render.run(parser.parse_args(["--slo"])) == 2


def test_every_recorded_bucket_list_names_a_mapped_family_and_its_sources() -> None:
    specs = {spec.name: spec for spec in (m.TIME_TO_FIRST_TOKEN, m.INTER_TOKEN_LATENCY)}
    for engine, histograms in BUCKETS.items():
        if engine == "_meta":
            continue
        for name, entry in histograms.items():
            assert entry["family"] in ENGINES[engine].sources[specs[name]], (engine, name)
            assert entry["bounds"] == sorted(entry["bounds"]) and entry["bounds"]
            for source in entry["sources"]:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+", source["repo"]) and re.fullmatch(
                    r"[0-9a-f]{40}", source["commit"]
                )


def _series(engine: str, late: int, reasons: dict[str, int]) -> list[dict[str, str]]:
    """80 minutes of one replica: 100 first tokens a minute, `late` of them over 2.5s; finished requests a minute
    by reason."""
    where = f'job="llm-exporter",namespace="demo",pod="{engine}-0",engine="{engine}",model="m",dp_rank="0"'
    out = [
        {"series": f'llm_time_to_first_token_seconds_bucket{{{where},le="2.5"}}', "values": f"0+{100 - late}x80"},
        {"series": f"llm_time_to_first_token_seconds_count{{{where}}}", "values": "0+100x80"},
    ]
    out += [
        {"series": f'llm_requests_finished_total{{{where},finished_reason="{r}"}}', "values": f"0+{n}x80"}
        for r, n in reasons.items()
    ]
    return out


def test_sloth_rules_and_the_bundle_rules_agree_in_promtool(tmp_path: Path) -> None:
    """Sloth's generated rules beside the bundle's, on the same series in promtool: the same error ratio over every
    window, and the same alerts firing (page and ticket) or none."""
    done = _sloth("generate", "-i", str(SLO / "sloth/vllm.yaml"), "-o", str(tmp_path / "sloth.yaml"))
    assert done.returncode == 0, done.stderr
    (tmp_path / "bundle.yaml").write_text((ROOT / "alerts/llm-exporter.rules.yaml").read_text(encoding="utf-8"))
    same = [
        {
            "expr": f'max by (namespace, model) (slo:sli_error:ratio_rate{w}{{sloth_slo="time-to-first-token"}})'
            f" - llm:ttft_slo_error_ratio:rate{w}",
            "eval_time": "80m",
            "exp_samples": [{"labels": '{namespace="demo", model="m"}', "value": 0}],
        }
        for w in slo_windows(DEFAULT)
    ]
    firing = 'count by (alertname, severity) (ALERTS{alertstate="firing", alertname=~"LLMTimeToFirstToken.*"})'
    burning = [
        {"labels": f'{{alertname="{name}", severity="{severity}"}}', "value": 1}
        for name in ("LLMTimeToFirstTokenBudgetBurn", "LLMTimeToFirstTokenSLO")
        for severity in ("critical", "warning")
        if name != "LLMTimeToFirstTokenBudgetBurn" or severity == "critical"
    ] + [{"labels": '{alertname="LLMTimeToFirstTokenBudgetBurnSlow", severity="warning"}', "value": 1}]
    errors = {
        "expr": 'max by (namespace, model) (slo:sli_error:ratio_rate5m{sloth_slo="errors"})',
        "eval_time": "30m",
        "exp_samples": [{"labels": '{namespace="demo", model="m"}', "value": 0.05}],
    }
    tests = {
        "rule_files": ["bundle.yaml", "sloth.yaml"],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": "1m",
                "input_series": _series("vllm", 50, {"stop": 90, "length": 5, "abort": 3, "error": 2}),
                "promql_expr_test": [*same, errors, {"expr": firing, "eval_time": "70m", "exp_samples": burning}],
            },
            {  # no late token and no failure: nothing fires
                "interval": "1m",
                "input_series": _series("vllm", 0, {"stop": 100, "abort": 0, "error": 0}),
                "promql_expr_test": [{"expr": firing, "eval_time": "70m", "exp_samples": []}],
            },
            {  # another engine's series are not this SLO's
                "interval": "1m",
                "input_series": _series("sglang", 50, {}),
                "promql_expr_test": [
                    {
                        "expr": 'slo:sli_error:ratio_rate5m{sloth_slo="time-to-first-token"}',
                        "eval_time": "30m",
                        "exp_samples": [],
                    }
                ],
            },
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False), encoding="utf-8")
    done = subprocess.run(
        [peer("promtool"), "test", "rules", str(tmp_path / "tests.yaml")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_pyrra_metrics_are_selectors_prometheus_parses(tmp_path: Path) -> None:
    metrics = [
        part["metric"]
        for path in sorted((SLO / "pyrra").glob("*.yaml"))
        for obj in slo.objects(path.read_text(encoding="utf-8"))
        for indicator in obj["spec"]["indicator"].values()
        for key, part in indicator.items()
        if key != "grouping"
    ]
    rules = {
        "groups": [{"name": "pyrra", "rules": [{"record": f"pyrra:m{i}", "expr": e} for i, e in enumerate(metrics)]}]
    }
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules), encoding="utf-8")
    done = subprocess.run(
        [peer("promtool"), "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(metrics) == 2 * 8  # vLLM 3 objects, SGLang 2, trtllm-serve 1, LMDeploy 2; two metrics each


def test_ttft_burn_alerts_say_where_the_objective_is_measured_at_a_lower_bound() -> None:
    """The description is true for an engine without a 2.5 s bucket (SGLang's are 1, 2, 4): it is measured at 2 s."""

    def description(t: Thresholds) -> str:
        return next(a.description for a in engine_alerts(t) if a.name == "LLMTimeToFirstTokenBudgetBurn")

    assert description(DEFAULT).startswith(
        "Objective: 99 % of first tokens within 2.5s (measured at 2s for an engine whose histogram has no 2.5s bound). "
    )
    assert description(dataclasses.replace(DEFAULT, ttft_slo_fallback_seconds=())).startswith(
        "Objective: 99 % of first tokens within 2.5s. At this rate"
    )
