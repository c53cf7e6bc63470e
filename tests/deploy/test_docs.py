"""The operator docs stay true: every PromQL query in them parses in Prometheus and names catalogue metrics
and labels; the opt-in annotations and commands they show are the ones the code and manifests use."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from exporter import cli
from exporter.catalogue import ALL
from exporter.config import KubernetesDiscovery, parse
from exporter.promql import selectors as promql
from tests.bundle import servers
from tests.deploy.manifests import BASE, ROOT, render

DOCS = [ROOT / "docs" / name for name in ("troubleshooting.md", "install.md", "upgrade.md")]
TARGET_LABELS = {"job", "instance"}  # added by Prometheus, not by the exporter
SAMPLES = {sample: spec for spec in ALL for sample in spec.sample_names}
RULE_FILE = ROOT / "alerts" / "llm-exporter.rules.yaml"
# series the bundle's recording rules define (llm:*), with the labels they keep
RECORDED = {r["record"] for g in yaml.safe_load(RULE_FILE.read_text())["groups"] for r in g["rules"] if "record" in r}


def blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def doc_queries() -> list[str]:
    return [
        line.strip()
        for path in DOCS
        for block in blocks(path, "promql")
        for line in block.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_the_troubleshooting_page_walks_the_four_stages_and_the_two_cases() -> None:
    text = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
    for stage in ("Route", "Cold start", "Bottleneck", "Ingress and gateway", "Queue", "Prefill", "Decode"):
        assert any(h.split(". ", 1)[-1].startswith(stage) for h in headings), stage
    assert "Pending with free GPUs" in headings
    assert "A dashboard panel went blank" in headings
    assert len(doc_queries()) >= 30


def test_every_doc_query_parses_in_prometheus(tmp_path: Path) -> None:
    queries = doc_queries()
    rules = [{"record": f"doc:query_{i}", "expr": q} for i, q in enumerate(queries)]
    path = tmp_path / "docs.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "docs", "rules": rules}]}))
    result = subprocess.run(
        [servers.PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("query", doc_queries())
def test_every_doc_query_uses_catalogue_names_and_labels(query: str) -> None:
    for selector in promql.selectors(query):
        if selector.name == "up":
            assert {m.label for m in selector.matchers} <= TARGET_LABELS
            continue
        if selector.name in RECORDED:
            assert {m.label for m in selector.matchers} <= {"namespace", "model", "pod", "resource"}, selector
            continue
        spec = SAMPLES.get(selector.name)
        assert spec is not None, f"{selector.name} is not an exported sample"
        for matcher in selector.matchers:
            assert matcher.label in (*spec.labels, *TARGET_LABELS), f"{selector.name} has no label {matcher.label}"


def test_the_opt_in_annotations_are_the_ones_discovery_reads() -> None:
    (block,) = [b for b in blocks(ROOT / "docs" / "install.md", "yaml") if "annotations" in b]
    annotations = yaml.safe_load(block)["metadata"]["annotations"]
    defaults = KubernetesDiscovery()
    prefix = defaults.annotation_prefix
    assert annotations == {
        f"{prefix}/scrape": "true",
        f"{prefix}/port": str(defaults.default_port),
        f"{prefix}/path": defaults.default_path,
        f"{prefix}/engine": "vllm",
    }


def test_the_objects_the_docs_name_exist() -> None:
    names = {f"{o['kind'].lower()}/{o['metadata']['name']}" for o in render(BASE)}
    for path in DOCS:
        for ref in re.findall(r"\b((?:daemonset|deployment)/llm-exporter-\w+)", path.read_text(encoding="utf-8")):
            assert ref in names, f"{path.name}: {ref}"
    overlays = {p.name for p in (ROOT / "deploy" / "overlays").iterdir()}
    for path in DOCS:
        for overlay in re.findall(r"deploy/overlays/([\w-]+)", path.read_text(encoding="utf-8")):
            assert overlay in overlays, f"{path.name}: {overlay}"


def test_the_multi_cluster_watchdog_config_is_one_the_exporter_reads() -> None:
    (block,) = [b for b in blocks(ROOT / "docs" / "install.md", "yaml") if "watchdog:" in b]
    watchdog = parse(block, "docs/install.md").cluster.watchdog
    assert (watchdog.enabled, watchdog.cluster, watchdog.cluster_label) == (True, "prod-eu", "cluster")
    assert watchdog.prometheus.replica_labels == ["replica"]


def test_the_multi_cluster_commands_take_the_flags_shown() -> None:
    (block,) = [b for b in blocks(ROOT / "docs" / "install.md", "sh") if "--cluster" in b]
    for line in block.splitlines():
        argv = line.split("#")[0].split()[1:]  # without `llm-exporter` and the comment
        cli.parser(argv[0]).parse_args(argv)
