"""`check` reads the generated Perses dashboards (exporter/check/perses.py, the reader of any Perses
dashboard) as exactly the queries of their Grafana twins: every panel query and variable definition, as
written and as resolved, on the same data source, for the plain Dashboard, the PersesDashboard and the
dashboards rendered for many clusters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from exporter.bundle import perses, render
from exporter.check.inputs import Query, file_queries

ROOT = render.ROOT
GRAFANA = ROOT / "dashboards" / "overview.json"
TWINS = [
    ROOT / "dashboards" / "overview.perses.yaml",
    ROOT / render.PERSES_EXAMPLE,
]


def read(path: Path) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    """The queries `check` finds in `path`, each where it is (the query's position, not its Grafana refId or
    Perses index), as written, as run, its data source and notes."""
    return [(where(q), q.raw, q.expr, q.datasource, q.notes) for q in file_queries(path, with_variables=True)]


def where(query: Query) -> str:
    found = re.fullmatch(r"(panel '.*' query )([A-Z]|\d+)", query.where)
    if not found:
        return query.where
    ref = found.group(2)
    return found.group(1) + (str(ord(ref) - ord("A") + 1) if ref.isalpha() else ref)


@pytest.mark.parametrize("twin", TWINS, ids=["Dashboard", "PersesDashboard"])
def test_the_perses_twin_reads_as_the_grafana_dashboard(twin: Path) -> None:
    grafana = read(GRAFANA)
    assert len(grafana) == 90  # 86 panel queries (7 of them the Tenants row) and 4 variables
    assert read(twin) == grafana


def test_the_v1alpha2_persesdashboard_reads_alike(tmp_path: Path) -> None:
    plain = yaml.safe_load(TWINS[0].read_text(encoding="utf-8"))
    path = tmp_path / "v1alpha2.yaml"
    path.write_text(perses.dump(perses.persesdashboard(plain, "perses.dev/v1alpha2")), encoding="utf-8")
    assert read(path) == read(GRAFANA)


def test_the_twins_rendered_for_many_clusters_read_alike(tmp_path: Path) -> None:
    files = render.out_files(ROOT, None, "cluster", None, with_perses=True)
    for name in ("llm-inference-overview.json", "llm-inference-overview.perses.yaml"):
        (tmp_path / name).write_text(files[name], encoding="utf-8")
    grafana = read(tmp_path / "llm-inference-overview.json")
    selector = '{__name__=~"llm_engine_up|llm_node_gpus_allocatable"}'
    assert ("variable 'cluster'", f"label_values({selector}, cluster)", f"group by (cluster) ({selector})") in [
        q[:3] for q in grafana
    ]
    assert read(tmp_path / "llm-inference-overview.perses.yaml") == grafana
