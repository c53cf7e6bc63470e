"""The rendered alert files and dashboards the package ships (exporter/bundle/data/), and `render --out` made
from them: what an installed exporter renders without the repository's alerts/ and dashboards/ sources
(rules as code, grafanalib, neither of them installed).

`python -m exporter.bundle` writes data/ with the other generated files, and `--check` fails on its drift,
so it is always the committed rendering of the sources; the options are applied as rewrites
(exporter/bundle/cluster.py, exporter/bundle/options.py) that give the generators' output byte for byte.
"""

from __future__ import annotations

from importlib import resources

from exporter.bundle import cluster, options, perses

# in the source tree, relative to the repository root (the generated files' paths)
FOLDER = "exporter/bundle/data"
# What `--out` writes: the alert files, under the names of the generated ones
ALERT_FILES = ("llm-exporter.rules.yaml", "prometheusrule.yaml", "grafana-alert-rules.json")
DASHBOARDS = "dashboards"  # data/dashboards/: by the file name the dashboard ConfigMap gives each
SLO = "slo"  # data/slo/: the SLO objects of deploy/slo/, by the file name `render --slo --out` gives each


def alert_files() -> dict[str, str]:
    """The shipped alert files by file name, as generated (relative runbook links, one cluster)."""
    data = resources.files("exporter.bundle").joinpath("data")
    return {name: data.joinpath(name).read_text(encoding="utf-8") for name in ALERT_FILES}


def dashboards() -> dict[str, str]:
    """The shipped dashboards by file name, as generated."""
    folder = resources.files("exporter.bundle").joinpath("data", DASHBOARDS)
    entries = sorted((e for e in folder.iterdir() if e.name.endswith(".json")), key=lambda e: e.name)
    return {e.name: e.read_text(encoding="utf-8") for e in entries}


def slo_files() -> dict[str, str]:
    """The shipped SLO objects by file name (`render --slo --out`)."""
    folder = resources.files("exporter.bundle").joinpath("data", SLO)
    entries = sorted((e for e in folder.iterdir() if e.name.endswith((".yaml", ".md"))), key=lambda e: e.name)
    return {e.name: e.read_text(encoding="utf-8") for e in entries}


def out_files(
    url: str | None, cluster_label: str | None, datasource_uid: str | None, with_perses: bool = False
) -> dict[str, str]:
    """What `render --out` writes, from the shipped files: the alert files with their runbook links `url#<anchor>`
    (None: relative), kept apart by `cluster_label` (None: one cluster) and the Grafana rules' queries on the data
    source `datasource_uid` (None: as generated); with a cluster label also the dashboards, filtered on it;
    `with_perses`: the dashboards' Perses twins (exporter/bundle/perses.py), filtered on it likewise."""
    files = alert_files()
    rules, manifest, grafana = ALERT_FILES
    if cluster_label is not None:
        files[rules] = cluster.rule_file(files[rules], cluster_label)
        files[manifest] = cluster.rule_file(files[manifest], cluster_label)
        files[grafana] = cluster.grafana_rules(files[grafana], cluster_label)
    if url is not None:
        files[rules] = options.runbook_links(files[rules], url)
        files[manifest] = options.runbook_links(files[manifest], url)
        files[grafana] = options.grafana_runbook_links(files[grafana], url)
    if datasource_uid is not None:
        files[grafana] = options.grafana_datasource(files[grafana], datasource_uid)
    boards = dashboards()
    if cluster_label is not None:
        boards = {name: cluster.dashboard(text, cluster_label) for name, text in boards.items()}
        files.update(boards)
    if with_perses:
        files.update(perses.out_files(boards))
    return files
