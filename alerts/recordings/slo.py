"""Recording rules `llm-inference.slo`: the share of first tokens slower than the objective over each window the
burn-rate alerts use, and the request rate that guards them against low traffic."""

from __future__ import annotations

from alerts.expr import MODEL
from alerts.model import Recording
from alerts.thresholds import Thresholds

GROUP = "llm-inference.slo"


def bucket_bound(seconds: float) -> str:
    """`le` as Prometheus 3 stores a classic histogram's bound: always a float (`5.0`, `2.5`)."""
    return repr(float(seconds))


def slo_error_ratio(window: str) -> str:
    return f"llm:ttft_slo_error_ratio:rate{window}"


def slo_windows(t: Thresholds) -> list[str]:
    """Every window a burn-rate pair uses, each once, shortest first."""
    seen: dict[str, None] = {}
    for burn in t.ttft_burn_rates:
        seen[burn.short_window] = None
        seen[burn.long_window] = None
    return sorted(seen, key=_seconds)


def _seconds(window: str) -> int:
    unit = {"m": 60, "h": 3600, "d": 86400}[window[-1]]
    return int(window[:-1]) * unit


def latency_error_ratio(histogram: str, seconds: float, window: str, fallbacks: tuple[float, ...] = ()) -> str:
    """The share of the observations of `histogram` above the bucket bound `seconds` over `window`, per model
    (the SLO generators of exporter/bundle/slo.py write the same expression for Sloth, one engine's bound each).
    A model whose histogram has no bucket at `seconds` is measured at the first of `fallbacks` it has."""
    goods = [
        f'sum by ({MODEL}) (rate({histogram}_bucket{{le="{bucket_bound(bound)}"}}[{window}]))'
        for bound in dict.fromkeys((seconds, *fallbacks))  # each bound once, in order
    ]
    rate_all = f"sum by ({MODEL}) (rate({histogram}_count[{window}]))"
    # `or` keeps a model's first bound that has series: the later ones only fill in models without it
    rate_good = goods[0] if len(goods) == 1 else "(" + " or ".join(goods) + ")"
    # no traffic in the window: no sample (not NaN), so a silent model neither burns nor recovers budget
    return f"1 - {rate_good} / ({rate_all} > 0)"


def recordings(t: Thresholds) -> list[Recording]:
    out = [
        Recording(
            slo_error_ratio(window),
            GROUP,
            latency_error_ratio(
                "llm_time_to_first_token_seconds", t.ttft_slo_seconds, window, t.ttft_slo_fallback_seconds
            ),
        )
        for window in slo_windows(t)
    ]
    out.append(
        Recording(
            "llm:ttft_requests:rate1h",
            GROUP,
            f"sum by ({MODEL}) (rate(llm_time_to_first_token_seconds_count[1h]))",
        )
    )
    return out
