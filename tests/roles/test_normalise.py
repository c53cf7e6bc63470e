"""The role goldens' normaliser masks what differs between two runs and nothing else."""

from __future__ import annotations

from tests import golden

RAW = """\
# HELP llm_exporter_collector_duration_seconds Time the collector's last run took.
# TYPE llm_exporter_collector_duration_seconds gauge
llm_exporter_collector_duration_seconds{collector="engines"} 0.0719
llm_engine_scrape_duration_seconds{namespace="demo",pod="vllm-0",engine="vllm"} 0.05
llm_kubernetes_last_sync_timestamp_seconds 1796366806.1392226
llm_request_duration_seconds_bucket{namespace="demo",pod="vllm-0",le="1.0"} 6
llm_request_duration_seconds_sum{namespace="demo",pod="vllm-0"} 0.41
llm_exporter_build_info{version="0.1.0",python_version="3.11.7",role="node"} 1
llm_replica_pod_info{namespace="demo",pod="vllm-bc69f96f7-g5t27",workload="vllm"} 1
llm_replica_pod_info{namespace="demo",pod="vllm-0",workload="vllm"} 1
llm_replica_pod_info{namespace="demo",pod="web-deadbeef",workload="web"} 1
"""

MASKED = """\
# HELP llm_exporter_collector_duration_seconds Time the collector's last run took.
# TYPE llm_exporter_collector_duration_seconds gauge
llm_exporter_collector_duration_seconds{collector="engines"} <varies>
llm_engine_scrape_duration_seconds{namespace="demo",pod="vllm-0",engine="vllm"} <varies>
llm_kubernetes_last_sync_timestamp_seconds <varies>
llm_request_duration_seconds_bucket{namespace="demo",pod="vllm-0",le="1.0"} 6
llm_request_duration_seconds_sum{namespace="demo",pod="vllm-0"} 0.41
llm_exporter_build_info{version="0.1.0",python_version="<varies>",role="node"} 1
llm_replica_pod_info{namespace="demo",pod="vllm-bc69f96f7-<random>",workload="vllm"} 1
llm_replica_pod_info{namespace="demo",pod="vllm-0",workload="vllm"} 1
llm_replica_pod_info{namespace="demo",pod="web-deadbeef",workload="web"} 1
"""


def test_only_timings_the_interpreter_and_random_pod_suffixes_are_masked() -> None:
    assert golden.exposition(RAW) == MASKED
    assert golden.exposition(MASKED) == MASKED  # idempotent: a golden normalised again is itself
