"""Ingress: the request-duration p99 near or above the shortest route timeout in front of the engines
(LLMRouteTimeoutBelowRequestDuration): long answers are cut mid-sentence, though the engine finished them."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, number, seconds

MODEL = "namespace, model"


def queries(limits: Limits) -> dict[str, str]:
    p99 = f"histogram_quantile(0.99, sum by ({MODEL}, le) (rate(llm_request_duration_seconds_bucket{{$NSM}}[$W])))"
    return {
        "cut": f"{p99} > on (namespace) group_left () {number(limits.route_timeout_fraction)}"
        " * min by (namespace) (llm_route_timeout_seconds{$NS})",
        "timeouts": "min by (namespace, route, kind, source) (llm_route_timeout_seconds{$NS})",
    }


SOURCES = {"default": "the proxy's default", "annotation": "its annotation", "spec": "its spec"}


def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
    q = VERDICT.qid
    out = []
    for s in r.samples(q("cut")):
        ns, model = s.label("namespace"), s.label("model")
        routes = sorted((t for t in r.samples(q("timeouts")) if t.label("namespace") == ns), key=lambda t: t.value)
        if not routes:
            continue
        shortest = routes[0]
        source = SOURCES.get(shortest.label("source"), shortest.label("source"))
        out.append(
            VERDICT.finding(
                f"answers of {ns}/{model} take {seconds(s.value)} (p99) but {shortest.label('kind')} "
                f"{ns}/{shortest.label('route')} cuts them at {seconds(shortest.value)} ({source}): long answers "
                "end mid-sentence",
                [r.evidence(q("cut"), s.value), r.evidence(q("timeouts"), shortest.value)],
                ns,
                model,
                weight=s.value / shortest.value if shortest.value else 0,
            )
        )
    return out


VERDICT = Verdict(
    id="ingress.route_timeout",
    stage="ingress",
    owner="platform",
    panel="Route timeout vs request duration p99",
    fix="Raise the timeout on that route (nginx.ingress.kubernetes.io/proxy-read-timeout, HTTPRoute "
    "timeouts.request/backendRequest) above the longest answer, or cap max_tokens so that requests end in time.",
    queries=queries,
    judge=judge,
    condition="cut",
)
