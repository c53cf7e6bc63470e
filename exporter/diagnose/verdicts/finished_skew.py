"""Routing: one replica finishes most of a model's requests while others idle: HTTP/2 or keep-alive connections
pinned to one pod (a Service's kube-proxy balances connections, not requests)."""

from __future__ import annotations

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Sample, number, per_sample, percent

MODEL = "namespace, model"


def queries(limits: Limits) -> dict[str, str]:
    per_pod = f"sum by ({MODEL}, pod) (rate(llm_requests_finished_total{{$NSM}}[$W]))"
    return {
        "share": f"{per_pod} / on ({MODEL}) group_left () (sum by ({MODEL}) ({per_pod}) > 0)"
        f" > {number(limits.finished_share)}"
        f" and on ({MODEL}) (count by ({MODEL}) (llm:replica_requests_running{{$NSM}}) > 1)",
    }


def says(s: Sample) -> str:
    return (
        f"{s.label('namespace')}/{s.label('pod')} finishes {percent(s.value)} of {s.label('model')}'s requests "
        "while its siblings idle: connections are pinned to one replica"
    )


VERDICT = per_sample(
    "share",
    says,
    id="routing.finished_skew",
    stage="routing",
    owner="platform",
    panel="Queue per replica",
    fix="Balance per request, not per connection: an L7 proxy or the inference gateway in front of the engines, "
    "shorter connection lifetimes (max requests per connection) for HTTP/2 and keep-alive clients.",
    queries=queries,
    scope=("namespace", "model"),
    weight=lambda s: s.value,
)
