"""The Perses twins of the Grafana dashboards (exporter/bundle/perses.py): the real percli (v0.54.0, built by
scripts/build-peers.sh) lints every generated one against the Perses plugins' CUE schemas; the mapping of
rows, units, thresholds, legends and variables on exact small cases; what it cannot map is an error naming
it; `render --out DIR --perses` writes the same files from a checkout and from the installed package."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.bundle import perses, render, shipped
from tests.peers import peer, perses_plugins

GENERATED = render.outputs()
PLAIN = "dashboards/overview.perses.yaml"
GRAFANA = json.loads(GENERATED["dashboards/overview.json"])


def percli_lint(tmp_path: Path, doc: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "dashboard.yaml"
    path.write_text(perses.dump(doc), encoding="utf-8")
    command = [peer("percli"), "lint", "-f", str(path), "--plugin.path", str(perses_plugins())]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def as_dashboard(spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Dashboard", "metadata": {"name": "llm-inference-overview"}, "spec": spec}


def generated_dashboards() -> dict[str, dict[str, Any]]:
    """Every generated Perses dashboard as a `Dashboard` percli reads (it knows no PersesDashboard)."""
    chart = render.CHART_FILES
    clustered = GENERATED[f"{render.CLUSTERED}/perses/llm-inference-overview.yaml"]
    (example,) = yaml.safe_load_all(GENERATED[render.PERSES_EXAMPLE])  # one PersesDashboard per dashboard
    return {
        "plain": yaml.safe_load(GENERATED[PLAIN]),
        "chart": as_dashboard(yaml.safe_load(GENERATED[f"{chart}/perses/llm-inference-overview.yaml"])),
        # the chart replaces the placeholder with clusterLabel
        "clustered": as_dashboard(yaml.safe_load(clustered.replace(render.CLUSTER_PLACEHOLDER, "cluster"))),
        "kustomize": as_dashboard(example["spec"]),
    }


@pytest.mark.parametrize("name", ["plain", "chart", "clustered", "kustomize"])
def test_percli_lints_every_generated_dashboard_clean(tmp_path: Path, name: str) -> None:
    done = percli_lint(tmp_path, generated_dashboards()[name])
    assert (done.returncode, done.stdout.strip()) == (0, "your resources look good"), done.stderr


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("unit: seconds", "unit: secondz", "timeserieschart/schemas/time-series.cue"),
        ("labelName: engine", "labelNam: engine", "invalid variable engine: spec.labelNam: field not allowed"),
        ("calculation: last-number", "calculation: lastNotNull", "invalid panel routes_that_buffer: spec.calculation"),
    ],
)
def test_percli_lint_rejects_what_the_plugin_schemas_do_not_allow(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    """The lint checks the plugins' schemas, not only the dashboard's shape."""
    assert old in GENERATED[PLAIN]
    done = percli_lint(tmp_path, yaml.safe_load(GENERATED[PLAIN].replace(old, new, 1)))
    assert done.returncode != 0
    assert message in done.stderr


def test_every_grafana_panel_and_query_has_its_twin() -> None:
    dashboard = yaml.safe_load(GENERATED[PLAIN])
    spec = dashboard["spec"]
    grafana = [p for p in GRAFANA["panels"] if p["type"] != "row"]
    assert [p["spec"]["display"]["name"] for p in spec["panels"].values()] == [p["title"] for p in grafana]
    queries = [[q["spec"]["plugin"]["spec"]["query"] for q in p["spec"]["queries"]] for p in spec["panels"].values()]
    assert queries == [[t["expr"] for t in p["targets"]] for p in grafana]
    rows = [p["title"] for p in GRAFANA["panels"] if p["type"] == "row"]
    assert [grid["spec"]["display"]["title"] for grid in spec["layouts"]] == rows
    assert sum(len(grid["spec"]["items"]) for grid in spec["layouts"]) == len(grafana)
    assert (dashboard["metadata"], spec["duration"], spec["refreshInterval"]) == (
        {"name": "llm-inference-overview"},
        "3h",
        "30s",
    )


def test_the_persesdashboard_wraps_the_same_spec() -> None:
    plain = yaml.safe_load(GENERATED[PLAIN])
    (wrapped,) = yaml.safe_load_all(GENERATED[render.PERSES_EXAMPLE])
    assert (wrapped["apiVersion"], wrapped["kind"], wrapped["metadata"]["name"]) == (
        "perses.dev/v1alpha1",
        "PersesDashboard",
        "llm-inference-overview",
    )
    assert wrapped["spec"] == plain["spec"]
    assert perses.persesdashboard(plain, "perses.dev/v1alpha2")["spec"] == {"config": plain["spec"]}
    with pytest.raises(perses.ConversionError, match=re.escape("'perses.dev/v1beta1': one of perses.dev/v1alpha1")):
        perses.persesdashboard(plain, "perses.dev/v1beta1")


# --- the mapping on small cases ------------------------------------------------------------------------------


def panel(kind: str = "timeseries", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"type": kind, "title": "Queue", "gridPos": {"x": 0, "y": 1, "w": 12, "h": 8}}
    base["targets"] = [{"refId": "A", "expr": "sum(llm_requests_waiting)", "legendFormat": "{{model}}"}]
    return {**base, **fields}


def convert(*panels: dict[str, Any], variables: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    grafana = {"uid": "u", "title": "T", "panels": list(panels), "templating": {"list": list(variables)}}
    spec: dict[str, Any] = perses.dashboard(grafana)["spec"]
    return spec


def test_a_row_is_a_grid_with_its_panels_placed_within_it() -> None:
    row = {"type": "row", "title": "Queue: why?", "collapsed": False, "gridPos": {"x": 0, "y": 9, "w": 24, "h": 1}}
    spec = convert(panel(), row, panel(gridPos={"x": 12, "y": 10, "w": 6, "h": 8}))
    assert spec["layouts"] == [
        {"kind": "Grid", "spec": {"items": [item(0, 1, 12, "queue")]}},
        {
            "kind": "Grid",
            "spec": {
                "items": [item(12, 0, 6, "queue_2")],
                "display": {"title": "Queue: why?", "collapse": {"open": True}},
            },
        },
    ]


def item(x: int, y: int, width: int, key: str) -> dict[str, Any]:
    return {"x": x, "y": y, "width": width, "height": 8, "content": {"$ref": f"#/spec/panels/{key}"}}


def test_units_thresholds_and_legend_of_a_time_series() -> None:
    defaults = {
        "unit": "percentunit",
        "min": 0,
        "max": 1,
        "decimals": 2,
        "thresholds": {
            "mode": "absolute",
            "steps": [{"color": "green", "value": None}, {"color": "red", "value": 0.9}],
        },
        "custom": {"fillOpacity": 30, "lineWidth": 1, "stacking": {"group": "A", "mode": "normal"}},
    }
    options = {"legend": {"calcs": ["lastNotNull", "max"], "displayMode": "table", "placement": "bottom"}}
    spec = convert(panel(fieldConfig={"defaults": defaults}, options=options))
    assert spec["panels"]["queue"]["spec"]["plugin"] == {
        "kind": "TimeSeriesChart",
        "spec": {
            "legend": {"position": "bottom", "mode": "table", "values": ["last-number", "max"]},
            "yAxis": {"format": {"unit": "percent-decimal", "decimalPlaces": 2}, "min": 0, "max": 1},
            "thresholds": {"mode": "absolute", "defaultColor": "green", "steps": [{"value": 0.9, "color": "red"}]},
            "visual": {"display": "line", "lineWidth": 1, "areaOpacity": 0.3, "stack": "all"},
        },
    }
    assert spec["panels"]["queue"]["spec"]["queries"] == [
        {
            "kind": "TimeSeriesQuery",
            "spec": {
                "plugin": {
                    "kind": "PrometheusTimeSeriesQuery",
                    "spec": {"query": "sum(llm_requests_waiting)", "seriesNameFormat": "{{model}}"},
                }
            },
        }
    ]


@pytest.mark.parametrize(
    ("unit", "perses_format"),
    [
        ("s", {"unit": "seconds"}),
        ("bytes", {"unit": "bytes"}),
        ("Bps", {"unit": "bytes/sec"}),
        ("reqps", {"unit": "requests/sec"}),
        ("short", {"unit": "decimal", "shortValues": True}),
    ],
)
def test_a_stat_takes_its_unit_and_reducer(unit: str, perses_format: dict[str, Any]) -> None:
    options = {"graphMode": "none", "reduceOptions": {"calcs": ["max"]}}
    spec = convert(panel("stat", fieldConfig={"defaults": {"unit": unit}}, options=options))
    assert spec["panels"]["queue"]["spec"]["plugin"] == {
        "kind": "StatChart",
        "spec": {"calculation": "max", "format": perses_format},
    }


def test_a_table_hides_excluded_columns_and_maps_values_per_column() -> None:
    mappings = [{"type": "value", "options": {"b": {"index": 1, "text": "B!"}, "a": {"index": 0, "text": "A!"}}}]
    overrides = [
        {"matcher": {"id": "byName", "options": "check"}, "properties": [{"id": "mappings", "value": mappings}]}
    ]
    organize = [{"id": "organize", "options": {"excludeByName": {"Time": True, "__name__": True}}}]
    table = panel("table", transformations=organize, fieldConfig={"defaults": {}, "overrides": overrides})
    assert convert(table)["panels"]["queue"]["spec"]["plugin"] == {
        "kind": "Table",
        "spec": {
            "columnSettings": [
                {"name": "timestamp", "hide": True},
                {"name": "__name__", "hide": True},
                {
                    "name": "check",
                    "cellSettings": [
                        {"condition": {"kind": "Value", "spec": {"value": "a"}}, "text": "A!"},
                        {"condition": {"kind": "Value", "spec": {"value": "b"}}, "text": "B!"},
                    ],
                },
                {"name": "value", "format": {"unit": "decimal", "shortValues": True}},  # Grafana's default unit
            ]
        },
    }


def test_a_tables_ordered_columns_come_first_in_grafanas_order() -> None:
    """Grafana's organize `indexByName`: Perses Table shows the columns of its settings first, in their order."""
    organize = {"indexByName": {"verdict": 1, "stage": 0}, "excludeByName": {"Time": True, "job": True}}
    table = panel("table", transformations=[{"id": "organize", "options": organize}])
    assert [c["name"] for c in convert(table)["panels"]["queue"]["spec"]["plugin"]["spec"]["columnSettings"]] == [
        "stage", "verdict", "timestamp", "job", "value"]  # fmt: skip


def test_a_tables_value_column_takes_the_panels_unit_unless_hidden() -> None:
    """Grafana formats a table's numbers by the panel's unit; Perses' Table shows every digit without a format."""
    table = panel("table", fieldConfig={"defaults": {"unit": "s", "decimals": 1}})
    assert convert(table)["panels"]["queue"]["spec"]["plugin"]["spec"] == {
        "columnSettings": [{"name": "value", "format": {"unit": "seconds", "decimalPlaces": 1}}]
    }
    hidden = panel("table", transformations=[{"id": "organize", "options": {"excludeByName": {"Value": True}}}])
    assert convert(hidden)["panels"]["queue"]["spec"]["plugin"]["spec"] == {
        "columnSettings": [{"name": "value", "hide": True}]
    }


def test_a_state_timeline_names_its_values_in_the_description() -> None:
    mappings = [{"type": "value", "options": {"0": {"index": 0, "text": "none"}}}]
    timeline = panel("state-timeline", description="Which binds.", fieldConfig={"defaults": {"mappings": mappings}})
    display = convert(timeline)["panels"]["queue"]["spec"]["display"]
    assert display == {"name": "Queue", "description": "Which binds. Values: 0 none."}


def test_variables_become_list_variables_and_the_data_source_one_is_dropped() -> None:
    datasource = {"type": "datasource", "name": "datasource", "query": "prometheus"}
    cluster = {
        "type": "query",
        "name": "cluster",
        "label": "Cluster",
        "query": 'label_values({__name__=~"llm_engine_up|llm_node_gpus_allocatable"}, cluster)',
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"value": "$__all"},
        "sort": 1,
    }
    bare = {"type": "query", "name": "ns", "query": "label_values(namespace)", "hide": 2}
    custom = {"type": "custom", "name": "q", "query": "0.5, 0.99", "current": {"value": "0.99"}}
    spec = convert(panel(), variables=(datasource, cluster, bare, custom))
    assert spec["variables"] == [
        {
            "kind": "ListVariable",
            "spec": {
                "name": "cluster",
                "display": {"name": "Cluster", "hidden": False},
                "defaultValue": "$__all",
                "allowAllValue": True,
                "allowMultiple": True,
                "customAllValue": ".*",
                "sort": "alphabetical-asc",
                "plugin": {
                    "kind": "PrometheusLabelValuesVariable",
                    "spec": {
                        "labelName": "cluster",
                        "matchers": ['{__name__=~"llm_engine_up|llm_node_gpus_allocatable"}'],
                    },
                },
            },
        },
        list_variable("ns", True, {"kind": "PrometheusLabelValuesVariable", "spec": {"labelName": "namespace"}}),
        {**list_variable("q", False, {"kind": "StaticListVariable", "spec": {"values": ["0.5", "0.99"]}})},
    ]
    assert spec["variables"][2]["spec"]["defaultValue"] == "0.99"


def list_variable(name: str, hidden: bool, plugin: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "display": {"name": name, "hidden": hidden}}
    if name == "q":
        spec["defaultValue"] = "0.99"
    spec.update({"allowAllValue": False, "allowMultiple": False, "sort": "none", "plugin": plugin})
    return {"kind": "ListVariable", "spec": spec}


@pytest.mark.parametrize(
    ("grafana", "message"),
    [
        (panel("piechart"), "panel 'Queue': Grafana panel type 'piechart' has no Perses panel here"),
        (panel(fieldConfig={"defaults": {"unit": "watt"}}), "panel 'Queue': Grafana unit 'watt' has no Perses format"),
        (panel(options={"legend": {"calcs": ["range"]}}), "panel 'Queue': Grafana reducer 'range' has no Perses"),
    ],
)
def test_what_has_no_mapping_is_an_error_naming_it(grafana: dict[str, Any], message: str) -> None:
    with pytest.raises(perses.ConversionError, match=re.escape(message)):
        convert(grafana)
    with pytest.raises(perses.ConversionError, match=re.escape("the pre-5.0 `rows` layout has no Perses twin")):
        perses.dashboard({"uid": "u", "rows": [{"panels": [panel()]}]})
    variable = {"type": "query", "name": "x", "query": "query_result(up)"}
    with pytest.raises(perses.ConversionError, match="variable 'x': query 'query_result"):
        convert(panel(), variables=(variable,))


# --- `render --out DIR --perses` -----------------------------------------------------------------------------


def llm_exporter(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "exporter", "render", *args]
    return subprocess.run(command, cwd=render.ROOT, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("label", [None, "cluster"])
def test_render_out_perses_is_the_same_from_the_checkout_and_the_package(label: str | None) -> None:
    from_sources = render.out_files(render.ROOT, None, label, None, with_perses=True)
    names = ["llm-inference-overview.perses.yaml", "llm-inference-overview.persesdashboard.yaml"]
    assert set(names) < set(from_sources)
    assert shipped.out_files(None, label, None, with_perses=True) == from_sources
    if label is None:
        assert from_sources[names[0]] == GENERATED[PLAIN]
        assert from_sources[names[1]] == GENERATED[render.PERSES_EXAMPLE]
    else:  # the clustered dashboard's twin: the chart's clustered copy with the label in place
        chart = GENERATED[f"{render.CLUSTERED}/perses/llm-inference-overview.yaml"]
        spec = yaml.safe_load(from_sources[names[0]])["spec"]
        assert spec == yaml.safe_load(chart.replace(render.CLUSTER_PLACEHOLDER, label))


def test_render_out_perses_writes_the_files(tmp_path: Path) -> None:
    done = llm_exporter("--out", str(tmp_path), "--perses")
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmp_path / "llm-inference-overview.perses.yaml").read_text(encoding="utf-8") == GENERATED[PLAIN]
    alerts = ["llm-exporter.rules.yaml", "prometheusrule.yaml", "grafana-alert-rules.json"]
    twins = ["llm-inference-overview.perses.yaml", "llm-inference-overview.persesdashboard.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*alerts, *twins])


def test_perses_without_out_is_a_usage_error() -> None:
    done = llm_exporter("--perses")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "llm-exporter render: error: --perses needs --out DIR: the repository's Perses files are written "
        "with the others\n"
    )
