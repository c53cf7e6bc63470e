"""Reading real files (tests/fixtures/check_corpus): adapter templates expanded as the adapter does, ConfigMaps
holding configs, bad input named; the derived release history has not drifted from its source."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from exporter.check import history, tables
from exporter.check.diagnosis import Running, explain
from exporter.check.inputs import BadFileError, file_queries
from exporter.engines import registry
from tests.peers import peer

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "check_corpus"


def test_adapter_resource_rules_in_a_configmap_are_expanded_and_valid_promql(tmp_path: Path) -> None:
    queries = file_queries(CORPUS / "prometheus-adapter-config-map.yaml")
    assert [q.where for q in queries] == [
        f"adapter resourceRules {r} {k}" for r in ("cpu", "memory") for k in ("containerQuery", "nodeQuery")
    ]
    assert 'node_cpu_usage_seconds_total{node!=""}[4m]' in queries[1].expr
    assert queries[2].expr.startswith('sum by (namespace,pod) (\n  container_memory_working_set_bytes{namespace!=""')
    assert all("<<" not in q.expr for q in queries)
    rules = [{"record": f"check:q{i}", "expr": q.expr} for i, q in enumerate(queries)]
    (tmp_path / "r.yaml").write_text(yaml.safe_dump({"groups": [{"name": "q", "rules": rules}]}))
    done = subprocess.run(
        [peer("promtool"), "check", "rules", str(tmp_path / "r.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_adapters_published_sample_is_reported_as_invalid_yaml() -> None:
    path = CORPUS / "prometheus-adapter-sample-config.yaml"
    with pytest.raises(BadFileError, match=rf"(?s)^{re.escape(str(path))}: not valid YAML: .*line 30, column 70"):
        file_queries(path)


def test_an_unrendered_helm_template_is_named_with_the_command_that_renders_it(tmp_path: Path) -> None:
    path = tmp_path / "prometheusrule.yaml"
    path.write_text(
        "{{- if .Values.prometheusRule.enabled }}\napiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\n"
        "spec:\n  groups:\n  - name: {{ .Release.Name }}\n{{- end }}\n"
    )
    with pytest.raises(BadFileError) as raised:
        file_queries(path)
    assert str(raised.value) == (
        f"{path}: an unrendered Helm template (line 1: {{{{- if .Values.prometheusRule.enabled }}}}), not YAML; "
        "render it first: `helm template <release> <chart> | llm-exporter check [--against …|--prometheus …] -`"
    )


def test_a_grafana_legend_is_no_helm_template(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text('legendFormat: "{{pod}}"\nexpr: [unclosed\n')
    with pytest.raises(BadFileError, match=r"bad.yaml: not valid YAML: "):
        file_queries(path)


HOSTILE = [
    ("scalar.yaml", "a: !!bool x\n", "not valid YAML: KeyError: 'x'"),
    ("index.yaml", "a: !!int ''\n", "not valid YAML: IndexError: string index out of range"),
    (
        "stamp.yaml",
        "a: !!timestamp x\n",
        "not valid YAML: AttributeError: 'NoneType' object has no attribute 'groupdict'",
    ),
    ("date.yaml", "a: 2001-13-45\n", "not valid YAML: ValueError: month must be in 1..12"),
    ("deep.yaml", "[" * 600, "not valid YAML: nested too deeply"),
    ("deep.json", "[" * 1100, "not valid JSON: nested too deeply"),
]


@pytest.mark.parametrize(("name", "text", "error"), HOSTILE)
def test_text_pyyaml_or_json_cannot_build_is_a_named_bad_file(tmp_path: Path, name: str, text: str, error: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(BadFileError) as raised:
        file_queries(tmp_path / name)
    assert str(raised.value) == f"{tmp_path / name}: {error}"


def test_derived_history_matches_its_source() -> None:
    if not history.SOURCE.exists():  # the per-release table lives in the source checkout
        pytest.fail(f"{history.SOURCE} is missing")
    assert history.main([]) == 0


def test_diagnosis_of_a_histogram_sample_names_its_family() -> None:
    running = {"vllm": Running("vllm", "0.32.0", "from llm_engine_info")}
    got = explain("vllm:time_per_output_token_seconds_bucket", running)
    assert got is not None and got.replacement == "vllm:inter_token_latency_seconds"
    assert got.text.startswith("vllm:time_per_output_token_seconds was removed in vLLM 0.15.0")
    assert explain("lmcache:num_hit_tokens_total", running) is None  # no release table knows it: fallback


def test_a_name_newer_than_the_running_release_says_so() -> None:
    got = explain("vllm:kv_cache_usage_perc", {"vllm": Running("vllm", "0.6.3", "inferred from its series")})
    assert got is not None and "first appears in vLLM" in got.text and got.replacement is None


def test_library_panels_scaledjobs_grafana_alerts_and_multi_document_yaml(tmp_path: Path) -> None:
    # shapes as Grafana exports them ("Export for sharing externally": library panels under __elements) and
    # as Grafana's alerting provisioning and KEDA document them
    board = {
        "__elements": {"lib1": {"kind": 1, "model": {"title": "lib", "targets": [{"refId": "A", "expr": "up"}]}}},
        "panels": [{"title": "from library", "libraryPanel": {"uid": "lib1", "name": "lib"}}],
    }
    alerts = {
        "apiVersion": 1,
        "groups": [
            {
                "orgId": 1,
                "name": "g",
                "folder": "f",
                "rules": [
                    {
                        "uid": "r",
                        "title": "queue",
                        "condition": "B",
                        "data": [
                            {
                                "refId": "A",
                                "datasourceUid": "p",
                                "model": {"expr": "max(x[$__interval])", "refId": "A"},
                            },
                            {"refId": "B", "datasourceUid": "__expr__", "model": {"type": "threshold", "refId": "B"}},
                        ],
                    }
                ],
            }
        ],
    }
    job = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledJob",
        "metadata": {"name": "batch"},
        "spec": {"triggers": [{"type": "prometheus", "name": "q", "metadata": {"query": "sum(y)", "threshold": "1"}}]},
    }
    (tmp_path / "board.json").write_text(json.dumps(board))
    (tmp_path / "many.yaml").write_text(yaml.safe_dump_all([alerts, {"kind": "Deployment"}, job]))
    assert [(q.where, q.expr, q.kind) for q in file_queries(tmp_path / "board.json")] == [
        ("panel 'from library' query A", "up", "dashboard")
    ]
    assert [(q.source, q.where, q.expr, q.kind) for q in file_queries(tmp_path / "many.yaml")] == [
        (f"{tmp_path / 'many.yaml'} document 1", "grafana alert 'queue' query A", "max(x[1m])", "grafana-alert"),
        (f"{tmp_path / 'many.yaml'} document 3", "ScaledJob batch trigger q", "sum(y)", "keda"),
    ]


def test_every_registered_engine_is_diagnosed_from_its_release_table() -> None:
    names = {h.engine for h in history.engines()}
    assert names >= set(registry.NAMES)
    got = explain("sglang:queue_time_s", {"sglang": Running("sglang", "0.5.4", "from llm_engine_info")})
    assert got is not None and got.replacement == "sglang:queue_time_seconds"
    assert got.text == (
        "sglang:queue_time_s was removed in SGLang 0.5.3; its successor is sglang:queue_time_seconds "
        "(stable name llm_request_queue_time_seconds); the running SGLang is 0.5.4 (from llm_engine_info)"
    )


def test_every_registered_engine_has_a_release_table_to_judge_by() -> None:
    """Derived or written (trtllm-serve's), each engine's table is there, under its own prefixes and name."""
    for name, engine in registry.ENGINES.items():
        table = tables.tables()[name]
        assert (table.label, table.prefixes) == (engine.display_name, engine.prefixes)
        assert table.releases == tuple(r.version for r in engine.releases().releases)
