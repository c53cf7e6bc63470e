"""House style for the bundle's dashboards (grafanalib 0.7.1).

Every panel reads from the `$datasource` variable, every panel must say its unit and what to do when it
looks bad (the helpers refuse to build one without), rates use `$__rate_interval`, and quantiles come from
`histogram_quantile` over buckets summed by `le`. Layout is computed here so dashboard files read as data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grafanalib.core as g

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24
SCHEMA_VERSION = 37  # Grafana 9.x: time series, stat and table panels with fieldConfig

# Label matchers bound to the dashboard variables (multi-value, "All" is the regex `.*`).
ENGINE = 'namespace=~"$namespace", engine=~"$engine", model=~"$model"'
SOURCE = 'namespace=~"$namespace"'  # engine-target metrics (no model label)
NODE = 'node=~"$node"'  # `node` is a target label added by the scrape config, or the cluster role's own label


def selector(metric: str, matchers: str) -> str:
    return f"{metric}{{{matchers}}}" if matchers else metric


def rate(metric: str, matchers: str) -> str:
    """`rate()` over `$__rate_interval`: at least four scrape intervals whatever the zoom."""
    return f"rate({selector(metric, matchers)}[$__rate_interval])"


def quantile(q: float, histogram: str, matchers: str, by: Sequence[str] = ()) -> str:
    """The q-quantile of a histogram over the selected series, summed by `le` (and `by`) first."""
    labels = ", ".join(("le", *by))
    return f"histogram_quantile({q}, sum by ({labels}) ({rate(histogram + '_bucket', matchers)}))"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False


def _targets(queries: Sequence[Query], table: bool = False) -> list[g.Target]:
    if not queries:
        raise ValueError("a panel needs at least one query")
    return [
        g.Target(
            expr=q.expr,
            legendFormat=q.legend,
            refId=chr(ord("A") + i),
            datasource=DATASOURCE,
            instant=q.instant or table,
            format="table" if table else g.TIME_SERIES_TARGET_FORMAT,
            intervalFactor=1,
        )
        for i, q in enumerate(queries)
    ]


def _require(title: str, unit: str, description: str) -> None:
    if not unit:
        raise ValueError(f"panel {title!r}: a unit is required")
    if len(description.split()) < 6:
        raise ValueError(f"panel {title!r}: the description must say what it shows and what to do when it looks bad")


@dataclass(frozen=True)
class Panel:
    """A panel before layout: `width` in grid columns (of 24)."""

    panel: Any
    width: int


def timeseries(
    title: str,
    queries: Sequence[Query],
    *,
    unit: str,
    description: str,
    width: int = 8,
    max_value: int | None = None,
    stacked: bool = False,
) -> Panel:
    _require(title, unit, description)
    return Panel(
        g.TimeSeries(
            title=title,
            description=description,
            dataSource=DATASOURCE,
            targets=_targets(queries),
            unit=unit,
            valueMin=0,
            valueMax=max_value,
            fillOpacity=30 if stacked else 10,
            stacking={"mode": "normal", "group": "A"} if stacked else {},
            legendDisplayMode="table",
            legendCalcs=["lastNotNull", "max"],
            tooltipMode="multi",
            tooltipSort="desc",
        ),
        width,
    )


def state_timeline(
    title: str, queries: Sequence[Query], *, states: Sequence[tuple[int, str, str]], description: str, width: int = 24
) -> Panel:
    """One band per series whose value is a state code; `states` maps each code to (text, colour)."""
    _require(title, "short", description)
    return Panel(
        g.StateTimeline(
            title=title,
            description=description,
            dataSource=DATASOURCE,
            targets=_targets(queries),
            mappings=[
                {"type": "value", "options": {str(code): {"text": text, "color": color, "index": i}}}
                for i, (code, text, color) in enumerate(states)
            ],
            colorMode="fixed",
            showValue="never",
            legendDisplayMode="hidden",
            extraJson={"fieldConfig": {"defaults": {"unit": "short"}}},  # the constructor takes no unit
        ),
        width,
    )


def stat(title: str, queries: Sequence[Query], *, unit: str, description: str, width: int = 4) -> Panel:
    _require(title, unit, description)
    return Panel(
        g.Stat(
            title=title,
            description=description,
            dataSource=DATASOURCE,
            targets=_targets(queries),
            format=unit,
            reduceCalc="lastNotNull",
            graphMode="area",
        ),
        width,
    )


def table(
    title: str,
    queries: Sequence[Query],
    *,
    unit: str,
    description: str,
    width: int = 12,
    first: Sequence[str] = (),
    hidden: Sequence[str] = (),
) -> Panel:
    """An instant table of series labels, e.g. which pod holds which GPU: the labels of `first` leftmost, in
    that order (a table of many labels would push the ones that say what it is off the right edge), those of
    `hidden` and the time and metric name not shown."""
    _require(title, unit, description)
    organize: dict[str, Any] = {"excludeByName": {"Time": True, "__name__": True, **dict.fromkeys(hidden, True)}}
    if first:
        organize["indexByName"] = {name: index for index, name in enumerate(first)}
    return Panel(
        g.Table(
            title=title,
            description=description,
            dataSource=DATASOURCE,
            targets=_targets(queries, table=True),
            unit=unit,
            filterable=True,
            transformations=[{"id": "organize", "options": organize}],
        ),
        width,
    )


@dataclass(frozen=True)
class Row:
    title: str
    panels: Sequence[Panel]


PANEL_HEIGHT = 8


def layout(rows: Sequence[Row]) -> list[Any]:
    """Row headers and panels with grid positions, left to right, wrapping at the grid width."""
    out: list[Any] = []
    y = 0
    for row in rows:
        out.append(g.RowPanel(title=row.title, gridPos=g.GridPos(h=1, w=GRID_WIDTH, x=0, y=y)))
        y += 1
        x = 0
        for item in row.panels:
            if x + item.width > GRID_WIDTH:
                x, y = 0, y + PANEL_HEIGHT
            item.panel.gridPos = g.GridPos(h=PANEL_HEIGHT, w=item.width, x=x, y=y)
            out.append(item.panel)
            x += item.width
        y += PANEL_HEIGHT
    return out


def _variable(name: str, label: str, query: str) -> g.Template:
    return g.Template(
        name=name,
        label=label,
        query=query,
        dataSource=DATASOURCE,
        includeAll=True,
        multi=True,
        allValue=".*",  # also matches series without the label (e.g. no `node` target label)
        default="$__all",
        refresh=g.REFRESH_ON_TIME_RANGE_CHANGE,
    )


def variables() -> list[g.Template]:
    return [
        g.Template(name="datasource", label="Data source", query="prometheus", type="datasource", default="default"),
        _variable("namespace", "Namespace", "label_values(llm_engine_up, namespace)"),
        # vLLM, SGLang, TGI, TensorRT-LLM, llama.cpp, LMDeploy: one dashboard, the same llm_* names
        _variable("engine", "Engine", 'label_values(llm_engine_up{namespace=~"$namespace"}, engine)'),
        _variable(
            "model", "Model", 'label_values(llm_requests_running{namespace=~"$namespace", engine=~"$engine"}, model)'
        ),
        _variable("node", "Node", "label_values(llm_node_gpus_allocatable, node)"),
    ]


def dashboard(
    *,
    title: str,
    uid: str,
    description: str,
    rows: Sequence[Row],
    tags: Sequence[str],
    annotations: Sequence[dict[str, Any]] = (),
) -> g.Dashboard:
    """A dashboard in house style; `uid` is fixed so links and provisioning survive regeneration. `annotations`:
    Grafana annotation queries, marks on every time series panel."""
    if not uid:
        raise ValueError("a dashboard needs a fixed uid")
    return g.Dashboard(
        title=title,
        uid=uid,
        description=description,
        tags=list(tags),
        editable=False,  # generated: edit the .dashboard.py source instead
        panels=layout(rows),
        templating=g.Templating(list=variables()),
        annotations=g.Annotations(list=list(annotations)),
        graphTooltip=g.GRAPH_TOOLTIP_MODE_SHARED_CROSSHAIR,
        refresh="30s",
        schemaVersion=SCHEMA_VERSION,
        time=g.Time("now-3h", "now"),
        timezone="browser",
    ).auto_panel_ids()
