"""The live query watchdog (cluster role): are the queries KEDA and Grafana run in this cluster still answered?

KEDA ScaledObjects and ScaledJobs with `prometheus` triggers, and dashboards in ConfigMaps labelled for the
Grafana sidecar, are watched; every `interval_seconds` a background thread runs their queries against the
configured Prometheus and stores the verdicts, which /metrics serves (a scrape never waits on Prometheus):

    llm_query_empty{kind, namespace, name, location}          1 empty, 0 data
    llm_query_empty_reason{kind, namespace, name, location, reason}   why (a fixed set; details in the log)
    llm_query_successor_info{kind, namespace, name, location, renamed, successor, fix}   a known rename
    llm_query_check_errors_total{reason}                      what could not be checked
    llm_query_check_last_run_timestamp_seconds                the last run that reached Prometheus
    llm_query_source_available{resource}                      0 when the KEDA CRDs are not served

Autoscaler queries are checked and logged before dashboard panels, and the log is limited per object, so
an old dashboard's many stale panels never crowd out the diagnosis of the ScaledObject that pages.
`adapter` is the one module that knows how queries are extracted and diagnosed; `model` holds the pure parts.
"""
