"""Engine: what the verdicts on the bundle's `llm:bottleneck` class share (kv_capacity, memory_bandwidth,
compute, one module each): a class counts when it holds for at least `bottleneck_window_share` of the
window's evaluations of the recording rule."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from exporter.diagnose.limits import Limits
from exporter.diagnose.model import Finding, Readings, Verdict, explained, number, percent

MODEL = "namespace, model"


def queries_for(resource: str, extra: dict[str, str]) -> Callable[[Limits], dict[str, str]]:
    def queries(limits: Limits) -> dict[str, str]:
        share = (
            f'sum by ({MODEL}) (count_over_time(llm:bottleneck{{resource="{resource}", $NSM}}[$W]))'
            f" / sum by ({MODEL}) (count_over_time(llm:bottleneck{{$NSM}}[$W]))"
            f" >= {number(limits.bottleneck_window_share)}"
        )
        return {"share": share, **extra}

    return queries


def p99(histogram: str) -> str:
    return f"histogram_quantile(0.99, sum by ({MODEL}, le) (rate({histogram}_bucket{{$NSM}}[$W])))"


def value(r: Readings, qid: str, namespace: str, model: str) -> float | None:
    return next(
        (
            s.value
            for s in r.samples(qid)
            if s.label("namespace") == namespace and s.label("model") == model and s.value == s.value
        ),
        None,
    )


def judge_for(
    verdict: Callable[[], Verdict],
    describe: Callable[[Readings, str, str], tuple[str, str, str, list[str]]],
    unless: Sequence[str] = (),
) -> Callable[[Readings, Sequence[Finding]], list[Finding]]:
    def judge(r: Readings, earlier: Sequence[Finding]) -> list[Finding]:
        v = verdict()
        out = []
        for s in r.samples(v.qid("share")):
            ns, model = s.label("namespace"), s.label("model")
            if unless and explained(earlier, ns, model, unless):
                continue
            resource, detail, consequence, names = describe(r, ns, model)
            evidence = [r.evidence(v.qid("share"), s.value)]
            for name in names:
                reading = value(r, v.qid(name), ns, model)
                if reading is not None:
                    evidence.append(r.evidence(v.qid(name), reading))
            out.append(
                v.finding(
                    f"{ns}/{model} is bound by {resource} for {percent(s.value)} of the window{detail}: {consequence}",
                    evidence,
                    ns,
                    model,
                    weight=s.value,
                )
            )
        return out

    return judge
