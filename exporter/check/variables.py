"""Grafana template variables, resolved and interpolated as Grafana does for a Prometheus data source.

Resolution (`resolve`): variables in dashboard order, so a chained variable sees the ones before it.
- query: `label_values(metric, label)`, `label_values(label)`, `metrics(regex)`, `query_result(query)`,
  answered by a `Lookup` (the only I/O, injected); the variable's `regex` filters and extracts, `sort` orders;
- custom (`a,b` or `text : value`), constant, textbox, interval (`auto` → `$__auto_interval`), datasource;
- the value is the saved `current` one when it is among the options (or is All), else the first option, as
  Grafana picks on load (All, when the variable includes it and saves no value); All is the variable's
  `allValue` when set, else every option.
Interpolation (`interpolate`): `$var`, `${var}`, `${var:format}`, `[[var]]`, `[[var:format]]`; without a
format, multi-value and All variables are regex-escaped and joined as `(a|b)`, others are quoted-escaped
(Grafana's Prometheus `interpolateQueryExpr`). Built-ins: `$__interval`, `$__rate_interval`, `$__range`…
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from exporter.sources.prometheus import PrometheusError

ALL = "$__all"

BUILTINS: dict[str, str] = {
    "__interval": "1m",
    "__interval_ms": "60000",
    "__rate_interval": "5m",
    "__rate_interval_ms": "300000",
    "__range": "1h",
    "__range_s": "3600",
    "__range_ms": "3600000",
    "__auto_interval": "1m",
    "__auto": "1m",
}
"""Grafana's built-ins at a 1h range: `$__rate_interval` is max(4 × scrape interval, `$__interval` + scrape)."""


class Lookup(Protocol):
    """What query variables need from Prometheus (see `exporter.sources.prometheus`)."""

    def query(self, expr: str) -> list[dict[str, Any]]: ...

    def label_values(self, label: str) -> list[str]: ...


@dataclass(frozen=True)
class Variable:
    name: str
    type: str  # query, custom, constant, interval, datasource, textbox, adhoc
    query: str = ""
    multi: bool = False
    include_all: bool = False
    all_value: str | None = None
    current: tuple[str, ...] = ()  # saved value(s); ("$__all",) for All
    options: tuple[str, ...] = ()  # saved options (custom, interval)
    regex: str = ""
    sort: int = 0


@dataclass(frozen=True)
class Value:
    """What a variable resolved to, with what interpolation needs to know about it."""

    values: tuple[str, ...]
    multi: bool = False
    include_all: bool = False
    all_value: str | None = None  # set when All is selected and the variable has a custom all value


@dataclass
class Resolution:
    values: dict[str, Value] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # e.g. a query variable that resolved to nothing


def parse(dashboard: Mapping[str, Any]) -> list[Variable]:
    """The dashboard's template variables, in order."""
    found = []
    for raw in (dashboard.get("templating") or {}).get("list") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        query = raw.get("query", "")
        if isinstance(query, dict):  # the newer shape: {"query": "...", "refId": ...}
            query = query.get("query", "")
        if not query and isinstance(raw.get("definition"), str):
            query = raw["definition"]
        found.append(
            Variable(
                name=raw["name"],
                type=str(raw.get("type", "query")),
                query=str(query or ""),
                multi=bool(raw.get("multi")),
                include_all=bool(raw.get("includeAll")),
                all_value=raw.get("allValue") or None,
                current=_current(raw.get("current")),
                options=tuple(_option_value(o) for o in raw.get("options") or [] if isinstance(o, dict)),
                regex=str(raw.get("regex") or ""),
                sort=int(raw.get("sort") or 0),
            )
        )
    return found


def _current(current: Any) -> tuple[str, ...]:
    value = current.get("value") if isinstance(current, dict) else None
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    return (str(value),) if value not in (None, "") else ()


def _option_value(option: Mapping[str, Any]) -> str:
    return str(option.get("value", option.get("text", "")))


def resolve(
    variables: Sequence[Variable], lookup: Lookup | None = None, overrides: Mapping[str, str] | None = None
) -> Resolution:
    """Each variable's value as Grafana would use it; `overrides` (from `--var`) win; without `lookup`, a
    query variable keeps its saved value, or `.*` when it has none."""
    out = Resolution()
    for var in variables:
        if overrides and var.name in overrides:
            out.values[var.name] = Value((overrides[var.name],))
            continue
        if var.type == "query" and (lookup is None or not var.query.strip()) and not _saved(var):
            out.values[var.name] = Value((".*",), multi=True, include_all=True, all_value=".*")  # nothing to ask
            continue
        options, problem = _options(var, lookup, out.values)
        if problem:
            out.problems.append(f"variable {var.name}: {problem}")
        out.values[var.name] = _choose(var, options)
    return out


def cluster_overrides(variables: Sequence[Variable], label: str, value: str) -> dict[str, str]:
    """`--var`-style values that show one cluster: every variable that selects it (a query variable listing
    the values of `label`, or one named after it) set to `value`."""
    out = {}
    for var in variables:
        m = _LABEL_VALUES.match(var.query) if var.type == "query" else None
        if var.name == label or (m is not None and m.group("label") == label):
            out[var.name] = value
    return out


def _saved(var: Variable) -> bool:
    return bool(var.current) and var.current != (ALL,)


def _options(var: Variable, lookup: Lookup | None, known: Mapping[str, Value]) -> tuple[list[str], str]:
    if var.type in {"constant", "textbox"}:
        return [var.query] if var.query or var.type == "constant" else list(var.current), ""
    if var.type == "custom":
        return [_custom_value(p) for p in _split_custom(var.query)] if var.query else list(var.options), ""
    if var.type == "interval":
        options = [o.strip() for o in var.query.split(",") if o.strip()] or list(var.options)
        return options, ""
    if var.type == "query":
        if lookup is None or not var.query.strip():
            return list(var.current), ""
        definition = interpolate(var.query, known)
        try:
            values = run_variable_query(definition, lookup)
        except (PrometheusError, re.error) as exc:  # fails in Grafana too: reported with the queries, not raised
            return [], f"{definition!r} failed: {exc}"
        options = _apply_regex(values, var.regex)
        options = _sort(list(dict.fromkeys(options)), var.sort)
        return options, "" if options else f"{definition!r} returns no values"
    return list(var.current) or [""], ""  # datasource, adhoc: no effect on the PromQL text


def _split_custom(query: str) -> list[str]:
    return [p.strip() for p in re.split(r"(?<!\\),", query) if p.strip()]


def _custom_value(part: str) -> str:
    if " : " in part:  # "text : value"
        return part.split(" : ", 1)[1].strip()
    return part.replace("\\,", ",")


def _choose(var: Variable, options: list[str]) -> Value:
    current = var.current
    if var.type == "interval" and current in (("auto",), ("$__auto_interval_" + var.name,)):
        return Value((BUILTINS["__auto_interval"],))
    if var.include_all and (current == (ALL,) or not current):  # All is the first option Grafana lists
        return _all(var, options)
    if current and all(c in options for c in current) and var.type != "textbox":
        chosen = current
    elif options:
        chosen = (options[0],)
    else:
        chosen = current or ("",)
    return Value(chosen, multi=var.multi, include_all=var.include_all)


def _all(var: Variable, options: list[str]) -> Value:
    if var.all_value is not None:
        return Value((var.all_value,), multi=True, include_all=True, all_value=var.all_value)
    return Value(tuple(options) or ("",), multi=True, include_all=True)


_LABEL_VALUES = re.compile(r"^\s*label_values\((?:\s*(?P<metric>.+)\s*,)?\s*(?P<label>[A-Za-z_][\w]*)\s*\)\s*$", re.S)
_METRICS = re.compile(r"^\s*metrics\((?P<regex>.*)\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\((?P<query>.*)\)\s*$", re.S)


def run_variable_query(definition: str, lookup: Lookup) -> list[str]:
    """The values a Prometheus query variable's definition yields (before its regex)."""
    if m := _LABEL_VALUES.match(definition):
        label, metric = m.group("label"), (m.group("metric") or "").strip()
        if not metric:
            return lookup.label_values(label)
        return sorted({r["metric"].get(label, "") for r in lookup.query(f"group by ({label}) ({metric})")} - {""})
    if m := _METRICS.match(definition):
        pattern = re.compile(m.group("regex").strip())
        return [n for n in lookup.label_values("__name__") if pattern.search(n)]
    if m := _QUERY_RESULT.match(definition):
        return [_result_text(r) for r in lookup.query(m.group("query"))]
    return [_result_text(r) for r in lookup.query(definition)]  # a plain PromQL query (newer Grafana "classic")


def definition_query(definition: str) -> str | None:
    """The PromQL a query variable's definition runs, to judge it as a query: `label_values(metric, label)` is
    `group by (label) (metric)` (as `run_variable_query` asks it), `query_result(q)` is `q`, `metrics(regex)`
    the names the regex finds anywhere in them (Grafana searches, PromQL anchors: `.*(?:regex).*`), a plain
    query itself; None for `label_values(label)`, which reads every series."""
    if m := _LABEL_VALUES.match(definition):
        metric = (m.group("metric") or "").strip()
        return f"group by ({m.group('label')}) ({metric})" if metric else None
    if m := _METRICS.match(definition):
        regex = m.group("regex").strip()
        return f"group by (__name__) ({{__name__=~{json.dumps(f'.*(?:{regex}).*')}}})" if regex else None
    if m := _QUERY_RESULT.match(definition):
        return m.group("query")
    return definition


def _result_text(result: Mapping[str, Any]) -> str:
    """A `query_result` row as Grafana renders it: `name{label="v", ...} value timestamp_ms`."""
    labels = dict(result.get("metric", {}))
    name = labels.pop("__name__", "")
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    t, v = result.get("value", [0, ""])
    return f"{name}{{{inner}}} {v} {int(float(t) * 1000)}"


def _apply_regex(values: list[str], regex: str) -> list[str]:
    """Grafana's variable regex: `/re/flags`; keeps matching values, extracting the `value` or first group."""
    if not regex:
        return values
    m = re.match(r"^/(.*)/([gimsuy]*)$", regex, re.S)
    body, flags = (m.group(1), m.group(2)) if m else (regex, "")
    body = re.sub(r"\(\?<(?=[A-Za-z])", "(?P<", body)  # JavaScript named groups
    pattern = re.compile(body, re.I if "i" in flags else 0)
    out = []
    for value in values:
        found = pattern.search(value)
        if found is None:
            continue
        groups = found.groupdict()
        if groups.get("value") is not None:
            out.append(groups["value"])
        elif groups.get("text") is not None:
            out.append(groups["text"])
        elif found.groups():
            out.append(found.group(1) or "")
        else:
            out.append(value)
    return out


def _sort(values: list[str], mode: int) -> list[str]:
    key: Callable[[str], Any] | None = {
        1: lambda v: v,
        2: lambda v: v,
        3: _number,
        4: _number,
        5: str.lower,
        6: str.lower,
        7: _natural,
        8: _natural,
    }.get(mode)
    return values if key is None else sorted(values, key=key, reverse=mode in (2, 4, 6, 8))


def _number(value: str) -> float:
    m = re.search(r"-?\d+(\.\d+)?", value)
    return float(m.group()) if m else float("-inf")


def _natural(value: str) -> list[Any]:
    return [(0, int(p), "") if p.isdigit() else (1, 0, p.lower()) for p in re.split(r"(\d+)", value) if p]


_VARIABLE = re.compile(r"\$\{(\w+)(?:\.[\w.]+)?(?::([^}]*))?\}|\[\[(\w+)(?::([^\]]*))?\]\]|\$(\w+)")
_REGEX_SPECIAL = re.compile(r"[$^*+?.()|\\{}\[\]]")


def interpolate(expr: str, values: Mapping[str, Value], builtins: Mapping[str, str] | None = None) -> str:
    """`expr` with every known variable replaced as Grafana replaces it in a Prometheus query.

    Unknown names (`$1` in `label_replace`) stay as written, as in Grafana.
    """
    extra = BUILTINS if builtins is None else builtins

    def replace(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3) or m.group(5)
        fmt = m.group(2) or m.group(4)
        if name in values:
            return format_value(values[name], fmt, name)
        if name in extra:
            return extra[name]
        return m.group(0)

    return _VARIABLE.sub(replace, expr)


def format_value(value: Value, fmt: str | None = None, name: str = "") -> str:
    """One variable's text in a query: Grafana's named formats, or the Prometheus data source's default."""
    items = list(value.values)
    if value.all_value is not None and fmt in (None, "regex", "pipe", "raw"):
        return value.all_value  # a custom all value goes in as written
    if fmt is None:
        if not value.multi and not value.include_all:
            return items[0].replace("\\", "\\\\").replace("'", "\\'") if items else ""
        escaped = [_regex_escape(v) for v in items]
        return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"
    kind, _, _ = fmt.partition(":")
    return _FORMATS.get(kind, _FORMATS["glob"])(items, name)


def _regex_escape(value: str) -> str:
    return _REGEX_SPECIAL.sub(lambda m: "\\\\" + m.group(), value)


def _plain_regex(value: str) -> str:
    return _REGEX_SPECIAL.sub(lambda m: "\\" + m.group(), value)


def _many(items: list[str], joined: str) -> str:
    return items[0] if len(items) == 1 else joined


_FORMATS: dict[str, Callable[[list[str], str], str]] = {
    "csv": lambda v, _: ",".join(v),
    "raw": lambda v, _: ",".join(v),
    "text": lambda v, _: " + ".join(v),
    "pipe": lambda v, _: "|".join(v),
    "regex": lambda v, _: _many([_plain_regex(x) for x in v], "(" + "|".join(_plain_regex(x) for x in v) + ")"),
    "glob": lambda v, _: _many(v, "{" + ",".join(v) + "}"),
    "json": lambda v, _: json.dumps(v if len(v) != 1 else v[0], separators=(",", ":")),
    "doublequote": lambda v, _: ",".join(f'"{x}"' for x in v),
    "singlequote": lambda v, _: ",".join(f"'{x}'" for x in v),
    "sqlstring": lambda v, _: ",".join("'" + x.replace("'", "''") + "'" for x in v),
    "distributed": lambda v, name: ",".join(v[:1] + [f"{name}={x}" for x in v[1:]]),
    "lucene": lambda v, _: _many(v, "(" + " OR ".join(f'"{x}"' for x in v) + ")"),
    "percentencode": lambda v, _: urllib.parse.quote(_many(v, "{" + ",".join(v) + "}"), safe=""),
    "queryparam": lambda v, name: "&".join(f"var-{name}={urllib.parse.quote(x, safe='')}" for x in v),
    "date": lambda v, _: ",".join(v),
}
