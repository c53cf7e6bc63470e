"""Every PromQL query of the files people keep queries in, with where it came from (pure but for reading files).

Recognised documents: Grafana dashboards (panels, nested and collapsed rows, the pre-5.0 `rows`, library
panels inlined from an export's `__elements`), in the containers `exporter.check.containers` opens (Grafana's
v1 and v2 resources, grafana-operator's `GrafanaDashboard`/`GrafanaManifest`, Perses dashboards and
`PersesDashboard`), Grafana-managed alert rules (`groups[].rules[].data[].model`), Prometheus rule files and
`PrometheusRule` objects, KEDA `ScaledObject`/`ScaledJob` prometheus triggers, `autoscaling/v2` HPA metric names
(`exporter.check.hpa`), prometheus-adapter configs (`seriesQuery`, and `metricsQuery` expanded as the adapter
expands it), and ConfigMaps embedding any of these (the Grafana sidecar's dashboards). YAML files may hold many
documents. Dashboard variables are resolved by `exporter.check.variables` (with a Prometheus for query
variables). A query on a data source that is not Prometheus (`exporter.check.datasources`) is returned with
that data source named, to be listed as skipped: it is never parsed as PromQL.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from exporter import hostile
from exporter.check import hpa, scrape, variables
from exporter.check.containers import Context, UnreadableError, dashboard
from exporter.check.datasources import Sources
from exporter.check.scope import Cluster
from exporter.unrendered import hint

SUFFIXES = (".json", ".yaml", ".yml")
RENDER = "`helm template <release> <chart> | llm-exporter check [--against …|--prometheus …] -`"
STDIN = Path("-")  # FILES `-`: the documents on standard input (a rendered chart)


@dataclass(frozen=True)
class Query:
    source: str  # file (and document) it came from
    where: str  # panel, rule or trigger
    expr: str  # ready to run: variables substituted
    alert: bool = False  # an alerting rule's condition: empty is its healthy state, so check its selectors
    raw: str = ""  # as written in the file (for --fix and --write); "" when `expr` is
    kind: str = ""  # dashboard, rule, grafana-alert, keda, adapter
    notes: tuple[str, ...] = ()  # e.g. a variable that resolved to nothing
    scales_to_zero: str = ""  # a KEDA ScaledObject that scales its target to zero: how it says so
    datasource: str = ""  # "" for PromQL; else what it runs on (loki, tempo, metrics-adapter): skipped, not parsed

    @property
    def written(self) -> str:
        return self.raw or self.expr


class BadFileError(Exception):
    """A file that cannot be read or parsed; the message names it."""


class UnknownFileError(BadFileError):
    """A file that parsed but holds nothing `check` knows."""


def dashboard_queries(
    dashboard: Mapping[str, Any],
    source: str,
    values: Mapping[str, str] | None = None,
    lookup: variables.Lookup | None = None,
    *,
    cluster: Cluster | None = None,
    with_variables: bool = False,
) -> Iterator[Query]:
    """The dashboard's queries with its variables resolved; with `cluster`, the variables that select the
    cluster set to it (`values` still win). `with_variables`: the query variables' definitions too, as the
    PromQL Grafana runs for them (`check --against` judges them offline; live, Prometheus resolves them and
    a variable without values is a note on every query)."""
    sources = Sources(dashboard)
    templating = _map(dashboard.get("templating"))
    kept = [v for v in templating.get("list") or [] if not isinstance(v, dict) or sources.variable_ok(v)]
    declared = variables.parse({**dashboard, "templating": {**templating, "list": kept}})
    if cluster is not None:
        values = {**variables.cluster_overrides(declared, cluster.label, cluster.value), **(values or {})}
    resolution = variables.resolve(declared, lookup, values)
    if with_variables:
        yield from _variable_queries(declared, resolution.values, source)
    found = dashboard.get("__elements")
    elements: Mapping[str, Any] = _map(found)
    panels = list(_panels(dashboard.get("panels") or [], elements))
    for row in dashboard.get("rows") or []:  # the pre-5.0 layout
        if isinstance(row, dict):
            panels.extend(_panels(row.get("panels") or [], elements))
    for panel in panels:
        for suffix, chosen in _repeats(panel, resolution.values):
            for target in panel.get("targets") or []:
                if not isinstance(target, dict) or target.get("hide"):
                    continue
                where = f"panel {panel.get('title', '?')!r} query {target.get('refId', '?')}{suffix}"
                other = sources.target(panel, target)
                text = target.get("expr") or target.get("query")
                if other and isinstance(text, str) and text.strip():  # LogQL, TraceQL…: named, never parsed
                    yield Query(source, where, text, kind="dashboard", datasource=other)
                    continue
                expr = target.get("expr")
                if not other and isinstance(expr, str) and expr.strip():
                    expanded = variables.interpolate(expr, chosen)
                    notes = tuple(resolution.problems)
                    yield Query(source, where, expanded, raw=expr, kind="dashboard", notes=notes)


def _variable_queries(
    declared: list[variables.Variable], values: Mapping[str, variables.Value], source: str
) -> Iterator[Query]:
    """Each query variable whose definition reads series (`label_values(metric, label)`, `query_result(…)`,
    `metrics(regex)`, a plain query), as the query Grafana runs, the definition as written kept for `--fix`."""
    for var in declared:
        if var.type != "query" or not var.query.strip():
            continue
        expr = variables.definition_query(variables.interpolate(var.query, values))
        if expr is not None:
            yield Query(source, f"variable {var.name!r}", expr, raw=var.query, kind="variable")


def _repeats(
    panel: Mapping[str, Any], values: Mapping[str, variables.Value]
) -> Iterator[tuple[str, Mapping[str, variables.Value]]]:
    """A panel repeated by a variable is one panel per value, each with that single value (as Grafana draws it)."""
    name = str(panel.get("repeat") or "")
    value = values.get(name)
    if value is None or len(value.values) < 2 or value.all_value is not None:
        yield "", values
        return
    for one in value.values:
        yield (
            f" ({name}={one})",
            {**values, name: variables.Value((one,), multi=value.multi, include_all=value.include_all)},
        )


def _panels(panels: list[Any], elements: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        if not isinstance(panel, dict):
            continue
        library = panel.get("libraryPanel")
        inlined = panel
        if isinstance(library, dict) and not panel.get("targets"):
            model = (elements.get(str(library.get("uid"))) or {}).get("model")
            if isinstance(model, dict):
                inlined = {**model, "title": panel.get("title") or model.get("title")}
        yield inlined
        yield from _panels(inlined.get("panels") or [], elements)  # collapsed rows


def rule_queries(groups: list[Any], source: str) -> Iterator[Query]:
    for group in groups:
        for rule in group.get("rules", []) if isinstance(group, dict) else []:
            if not isinstance(rule, dict):
                continue
            if isinstance(rule.get("data"), list):  # Grafana-managed: each data query must return series
                yield from _grafana_alert(rule, source)
            elif not isinstance(rule.get("expr"), str):
                continue
            elif "alert" in rule:
                yield Query(source, f"alert {rule['alert']}", rule["expr"], alert=True, kind="rule")
            else:
                yield Query(source, f"recording rule {rule.get('record', '?')}", rule["expr"], kind="rule")


def _grafana_alert(rule: Mapping[str, Any], source: str) -> Iterator[Query]:
    for item in rule["data"]:
        model = item.get("model") if isinstance(item, dict) else None
        expr = model.get("expr") if isinstance(model, dict) else None
        if isinstance(expr, str) and expr.strip():
            where = f"grafana alert {rule.get('title', '?')!r} query {item.get('refId', '?')}"
            expanded = variables.interpolate(expr, {})
            yield Query(source, where, expanded, raw=expr, kind="grafana-alert")


def _keda(doc: Mapping[str, Any], source: str) -> Iterator[Query]:
    name = (doc.get("metadata") or {}).get("name", "?")
    zero = _scales_to_zero(doc)
    for i, trigger in enumerate((doc.get("spec") or {}).get("triggers") or []):
        if isinstance(trigger, dict) and trigger.get("type") == "prometheus":
            query = (trigger.get("metadata") or {}).get("query")
            if isinstance(query, str):
                where = f"{doc['kind']} {name} trigger {trigger.get('name', i)}"
                yield Query(source, where, query, kind="keda", scales_to_zero=zero)


def _scales_to_zero(doc: Mapping[str, Any]) -> str:
    """How a ScaledObject scales its target to zero replicas ("" when it keeps one): `idleReplicaCount: 0`, or
    `minReplicaCount` 0 (KEDA's default when unset, unless an idle count is set)."""
    if doc.get("kind") != "ScaledObject":
        return ""
    spec = doc.get("spec") or {}
    if spec.get("idleReplicaCount") == 0:
        return "idleReplicaCount: 0"
    if "idleReplicaCount" in spec:
        return ""
    if "minReplicaCount" not in spec:
        return "minReplicaCount unset (KEDA's default is 0)"
    return "minReplicaCount: 0" if spec.get("minReplicaCount") == 0 else ""


def adapter_queries(rules: list[Any], source: str, section: str) -> Iterator[Query]:
    """prometheus-adapter rules, their templates expanded as the adapter does for a request of any object."""
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict) or not isinstance(rule.get("seriesQuery"), str):
            continue
        where = f"adapter {section} rule {i} ({(rule.get('name') or {}).get('as') or rule['seriesQuery']})"
        yield Query(source, f"{where} seriesQuery", rule["seriesQuery"], kind="adapter")
        # a seriesQuery matching many names runs its metricsQuery once per discovered name: its seriesQuery
        # is what can go empty
        if isinstance(rule.get("metricsQuery"), str) and _series_name(rule["seriesQuery"]):
            expanded = expand_adapter_template(rule["metricsQuery"], rule)
            yield Query(source, f"{where} metricsQuery", expanded, raw=rule["metricsQuery"], kind="adapter")


def _series_name(series_query: str) -> str:
    """The one metric name a seriesQuery selects (`name{…}`, `{__name__="name"}`, `{__name__=~"^name$"}`)."""
    m = re.search(r'__name__=~?"\^?([^"]*?)\$?"', series_query)
    name = m.group(1) if m else re.sub(r"\{.*", "", series_query, flags=re.S).strip()
    return name if re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", name) else ""


def resource_rule_queries(rules: Mapping[str, Any], source: str) -> Iterator[Query]:
    """`resourceRules` (the adapter's metrics API): per resource a containerQuery and a nodeQuery."""
    for resource, rule in rules.items():
        if not isinstance(rule, dict):
            continue
        labels = [str(label) for label in ((rule.get("resources") or {}).get("overrides") or {})]
        for key, scope in (("containerQuery", ["namespace", "pod"]), ("nodeQuery", ["node"])):
            if isinstance(rule.get(key), str):
                used = {**rule, "resources": {"overrides": dict.fromkeys(x for x in labels if x in scope)}}
                expanded = expand_adapter_template(rule[key], used)
                yield Query(source, f"adapter resourceRules {resource} {key}", expanded, raw=rule[key], kind="adapter")


def expand_adapter_template(template: str, rule: Mapping[str, Any]) -> str:
    """`<<.Series>>` is the series' name; `<<.LabelMatchers>>` selects every object (`label!=""` for each
    resource label); `<<.GroupBy>>` is the resource labels the adapter groups by."""
    name = _series_name(str(rule.get("seriesQuery", "")))
    overrides = ((rule.get("resources") or {}).get("overrides") or {}).keys()
    labels = [str(label) for label in overrides] or ["namespace"]
    matchers = ",".join(f'{label}!=""' for label in labels)
    text = re.sub(r"<<\s*\.Series\s*>>", name, template)
    text = re.sub(r"<<\s*\.LabelMatchers\s*>>", matchers, text)
    return re.sub(r"<<\s*\.GroupBy\s*>>", ",".join(labels), text)


def document_queries(
    doc: Any,
    source: str,
    values: Mapping[str, str] | None = None,
    lookup: variables.Lookup | None = None,
    *,
    cluster: Cluster | None = None,
    context: Context | None = None,
    with_variables: bool = False,
) -> Iterator[Query] | None:
    """The queries of one parsed document, or None when it is nothing `check` knows; `context` is the rest of
    its input (the ConfigMaps a GrafanaDashboard refers to); `with_variables` as `dashboard_queries`."""
    if not isinstance(doc, dict):
        return None
    kind = doc.get("kind")
    if kind == "PrometheusRule":
        return rule_queries((doc.get("spec") or {}).get("groups") or [], source)
    if kind in ("ScaledObject", "ScaledJob"):
        return _keda(doc, source)
    if kind == "ConfigMap":
        return _config_map(doc, source, values, lookup, cluster, context, with_variables)
    if hpa.is_hpa(doc):
        return (Query(source, m.where, m.expr, kind="hpa", datasource=m.datasource) for m in hpa.metrics(doc))
    contained = dashboard(doc, context)
    if contained is not None:
        inner, where = contained
        inner = inner["dashboard"] if isinstance(inner.get("dashboard"), dict) else inner  # the API's form
        named = f"{source} {where}" if where else source
        return dashboard_queries(inner, named, values, lookup, cluster=cluster, with_variables=with_variables)
    if scrape.is_scrape_config(doc):
        return iter(())  # no queries: it says how histograms are stored (`scrape.converting`)
    if isinstance(doc.get("groups"), list):
        return rule_queries(doc["groups"], source)
    if "panels" in doc or "rows" in doc:
        return dashboard_queries(doc, source, values, lookup, cluster=cluster, with_variables=with_variables)
    if isinstance(doc.get("dashboard"), dict):  # the API's {"dashboard": {...}, "meta": {...}}
        dashboard_doc = doc["dashboard"]
        return dashboard_queries(dashboard_doc, source, values, lookup, cluster=cluster, with_variables=with_variables)
    rules = doc.get("rules")
    if isinstance(rules, dict):  # the adapter's Helm values: rules.custom / rules.external
        rules = {k: v for k, v in rules.items() if isinstance(v, list)}
        return (q for section, rs in rules.items() for q in adapter_queries(rs, source, section))
    if isinstance(rules, list) or isinstance(doc.get("externalRules"), list) or "resourceRules" in doc:
        return _adapter_config(doc, source)  # the adapter's own config file
    return None


def _adapter_config(doc: Mapping[str, Any], source: str) -> Iterator[Query]:
    for section in ("rules", "externalRules"):
        yield from adapter_queries(doc.get(section) or [], source, section)
    if isinstance(doc.get("resourceRules"), dict):
        yield from resource_rule_queries(doc["resourceRules"], source)


def _config_map(
    doc: Mapping[str, Any],
    source: str,
    values: Mapping[str, str] | None,
    lookup: variables.Lookup | None,
    cluster: Cluster | None = None,
    context: Context | None = None,
    with_variables: bool = False,
) -> Iterator[Query] | None:
    found: list[Query] = []
    recognised = False
    name = str((doc.get("metadata") or {}).get("name") or "")
    for key, text in (doc.get("data") or {}).items():
        if context is not None and (name, str(key)) in context.referenced:
            recognised = True  # read as the GrafanaDashboard that refers to it, not twice
            continue
        try:
            inner = json.loads(text) if str(key).endswith(".json") else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError, TypeError):
            continue
        named = f"{source} {key}"
        queries = document_queries(inner, named, values, lookup, cluster=cluster, with_variables=with_variables)
        if queries is not None:
            recognised = True
            found.extend(queries)
    return iter(found) if recognised else None


@functools.cache
def _stdin() -> str:
    """Standard input, read once: a file is read again per cluster and for its scrape configuration."""
    return sys.stdin.read()


def load_documents(path: Path) -> list[Any]:
    try:
        text = _stdin() if path == STDIN else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadFileError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from exc
    is_json = path.suffix == ".json" or (path == STDIN and text.lstrip().startswith("{"))
    kind = "JSON" if is_json else "YAML"
    try:
        return [json.loads(text)] if is_json else list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise BadFileError(hint(str(path), text, RENDER) or f"{path}: not valid {kind}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise BadFileError(hint(str(path), text, RENDER) or f"{path}: not valid {kind}: {exc}") from exc
    except hostile.BUILD_ERRORS as exc:
        raise BadFileError(hint(str(path), text, RENDER) or f"{path}: not valid {kind}: {hostile.why(exc)}") from exc


def file_queries(
    path: Path,
    values: Mapping[str, str] | None = None,
    lookup: variables.Lookup | None = None,
    *,
    cluster: Cluster | None = None,
    with_variables: bool = False,
) -> list[Query]:
    """Every query of `path`; raises BadFileError (UnknownFileError when nothing in it is recognised). With
    `cluster`, dashboards' cluster variables are set to it; `with_variables` as `dashboard_queries`."""
    docs = load_documents(path)
    context = Context.of(docs)
    found: list[Query] = []
    recognised = False
    for i, doc in enumerate(docs):
        source = str(path) if len(docs) == 1 else f"{path} document {i + 1}"
        try:
            queries = document_queries(
                doc, source, values, lookup, cluster=cluster, context=context, with_variables=with_variables
            )
            if queries is not None:
                recognised = True
                found.extend(queries)
        except UnreadableError as exc:
            raise BadFileError(f"{source}: {exc}") from exc
        except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a list or a number where a map is due
            raise BadFileError(f"{source}: a {_kind(doc)} of an unexpected shape: {type(exc).__name__}: {exc}") from exc
    if not recognised:
        raise UnknownFileError(
            f"{path}: not a Grafana dashboard (classic, v1 or v2 resource, GrafanaDashboard, GrafanaManifest), "
            "Perses dashboard or PersesDashboard, Grafana alert rule file, Prometheus rule file, PrometheusRule, "
            "KEDA ScaledObject/ScaledJob, autoscaling/v2 HorizontalPodAutoscaler, prometheus-adapter config, "
            "Prometheus scrape configuration or ServiceMonitor/PodMonitor, or ConfigMap holding one"
        )
    return found


def _kind(doc: Any) -> str:
    kind = doc.get("kind") if isinstance(doc, dict) else None
    return str(kind) if isinstance(kind, str) and kind else "document"


def expand(paths: list[Path]) -> list[Path]:
    """Files as given, and directories searched for dashboards and YAML."""
    out = []
    for path in paths:
        if hostile.is_dir(path):
            out.extend(sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()))
        else:
            out.append(path)
    return out


def _map(value: Any) -> dict[str, Any]:
    """`value` when it is a mapping, else an empty one (a list or a scalar where a map is due reads as none)."""
    return value if isinstance(value, dict) else {}
