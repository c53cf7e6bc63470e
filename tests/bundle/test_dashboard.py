"""Dashboard structure, checked as dashboard-linter would: uid, datasource variable, units, descriptions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dashboards import lib
from exporter.bundle import render

OVERVIEW = json.loads((render.ROOT / "dashboards/overview.json").read_text())
PANELS = [p for p in OVERVIEW["panels"] if p["type"] != "row"]


def test_uid_and_title_are_fixed() -> None:
    assert OVERVIEW["uid"] == "llm-inference-overview"
    assert OVERVIEW["editable"] is False


def test_variables() -> None:
    variables = {v["name"]: v for v in OVERVIEW["templating"]["list"]}
    assert list(variables) == ["datasource", "namespace", "engine", "model", "node"]
    assert (variables["datasource"]["type"], variables["datasource"]["query"]) == ("datasource", "prometheus")
    for name in ("namespace", "engine", "model", "node"):
        v = variables[name]
        assert (v["type"], v["multi"], v["includeAll"], v["allValue"]) == ("query", True, True, ".*")
        assert v["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


@pytest.mark.parametrize("panel", PANELS, ids=[p["title"] for p in PANELS])
def test_every_panel_has_unit_description_and_the_datasource_variable(panel: dict[str, Any]) -> None:
    assert panel["fieldConfig"]["defaults"]["unit"], "unit"
    assert len(panel["description"]) > 40, "description"
    assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    assert panel["targets"]
    for target in panel["targets"]:
        assert target["datasource"] == panel["datasource"]


def test_panel_ids_are_unique_and_panels_do_not_overlap() -> None:
    ids = [p["id"] for p in OVERVIEW["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for p in OVERVIEW["panels"]:
        pos = p["gridPos"]
        assert pos["x"] + pos["w"] <= 24
        mine = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not mine & cells, p["title"]
        cells |= mine


def test_the_story_of_one_request_in_order() -> None:
    rows = [p["title"].split(":")[0] for p in OVERVIEW["panels"] if p["type"] == "row"]
    assert rows == [
        "Diagnosis",
        "Users",
        "Queue",
        "Routing",
        "Engine",
        "GPU",
        "Placement",
        "Telemetry health",
        "Deployment checks",
        "Capacity",
        "Tenants",
    ]


def test_helpers_refuse_panels_without_unit_or_description() -> None:
    q = [lib.Query("up")]
    with pytest.raises(ValueError, match="a unit is required"):
        lib.timeseries("t", q, unit="", description="what it shows and what to do about it")
    with pytest.raises(ValueError, match="the description must say"):
        lib.stat("t", q, unit="s", description="latency")
    with pytest.raises(ValueError, match="at least one query"):
        lib.table("t", [], unit="s", description="what it shows and what to do about it")
