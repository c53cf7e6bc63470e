"""Ingress: a route whose proxy buffers engine responses (LLMRouteBuffering): tokens reach users in bursts or
at the end, so the first token users see comes with the whole answer."""

from __future__ import annotations

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Sample, per_sample


def queries(limits: Limits) -> dict[str, str]:
    return {"on": "llm_route_buffering{$NS} == 1"}


def says(s: Sample) -> str:
    return (
        f"{s.label('kind')} {s.label('namespace')}/{s.label('route')} buffers engine responses: streamed tokens "
        "reach users in bursts, the first with the whole answer"
    )


VERDICT = per_sample(
    "on",
    says,
    id="ingress.route_buffering",
    stage="ingress",
    owner="platform",
    panel="Routes that buffer",
    fix='Turn buffering off on routes that stream (nginx.ingress.kubernetes.io/proxy-buffering: "off").',
    queries=queries,
    scope=("namespace",),
)
