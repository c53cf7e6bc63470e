"""`llm-exporter check` as a library: the queries of dashboards and autoscalers, run against a Prometheus.

Interface (the CLI in `cli.py` and the cluster watchdog use only these):

- `inputs.file_queries(path, values=None, lookup=None) -> list[Query]`, and for parsed objects
  `inputs.document_queries(doc, source, values=None, lookup=None) -> Iterator[Query] | None` (None: not a
  document `check` knows). `Query(source, where, expr, alert, raw, kind, notes, scales_to_zero, datasource)`:
  `expr` is ready to run, `raw` as written, `kind` one of dashboard, rule, grafana-alert, keda, hpa, adapter;
  `datasource` is "" for PromQL, else what the query runs on (loki, tempo…, metrics-adapter): such a query is
  listed as skipped, never run. The containers read (`containers`, `grafana_v2`, `perses`, `hpa`) are turned
  into the classic Grafana model first. Raises `inputs.BadFileError` (and its `UnknownFileError`) with a
  message naming the file; a path `-` is standard input.
- `variables.parse(dashboard) -> list[Variable]`, `variables.resolve(vars, lookup, overrides) -> Resolution`
  (`.values: dict[name, Value]`, `.problems`), `variables.interpolate(expr, values) -> str`: Grafana's
  resolution and interpolation; `lookup` is anything with `query(expr)` and `label_values(label)`.
- `evaluate.Checker(prometheus, lookback="7d").check(query) -> Result(query, status, reasons, fix, renames)`
  with status "ok", "empty", "allowed" (empty as marked or expected) or "error"; `Checker.running()` gives
  the running engine releases.
- `diagnosis.explain(name, running) -> Diagnosis(name, text, replacement) | None`: what the engines' release
  histories (`history.engines()`, one `EngineHistory` per engine, and one for llm-d's endpoint picker from its
  producer table) say about a missing name; `diagnosis.deprecated(name, version)`: a name still written in
  the window of a declared rename (the EPP's dual-write), with its successor.
- `fix.rewrite(text, results, json_file) -> str`; `report.record(result) -> dict` (file, location, expr,
  status, reasons, fix).

Prometheus I/O is `exporter.sources.prometheus.HttpPrometheus` (the `Prometheus` protocol).
"""
