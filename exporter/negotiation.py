"""What a scrape asks for, read from its request headers: the format (`Accept`), compression
(`Accept-Encoding`) and how long the scraper waits (Prometheus' `X-Prometheus-Scrape-Timeout-Seconds`).

The rules follow prometheus_client's (`choose_encoder`, `gzip_accepted`), and also honour `q=0`.
"""

from __future__ import annotations

import math

SCRAPE_TIMEOUT_HEADER = "X-Prometheus-Scrape-Timeout-Seconds"
SEND_MARGIN_SECONDS = 0.5  # of the scraper's timeout, kept for rendering and sending the body
MIN_BUDGET_SECONDS = 0.05


def wants_openmetrics(accept: str | None) -> bool:
    """True when `accept` asks for OpenMetrics (any version up to 1.x, or none) with a non-zero weight.

    Prometheus 3 asks for OpenMetrics first by default; every other client gets the text format.
    """
    for entry in (accept or "").split(","):
        media, *params = (part.strip() for part in entry.split(";"))
        if media.lower() != "application/openmetrics-text":
            continue
        options = dict(p.partition("=")[::2] for p in params)
        if _weight(options.get("q", "1")) > 0 and options.get("version", "1.0.0").split(".")[0] in ("0", "1"):
            return True
    return False


def _weight(q: str) -> float:
    try:
        weight = float(q)
    except ValueError:
        return 0.0
    return weight if math.isfinite(weight) else 0.0


def accepts_gzip(header: str | None) -> bool:
    """True when an `Accept-Encoding` header lists gzip (or *) with a non-zero weight."""
    for entry in (header or "").split(","):
        coding, _, params = entry.partition(";")
        if coding.strip().lower() in ("gzip", "x-gzip", "*"):
            params = params.strip()
            return _weight(params.removeprefix("q=") if params.startswith("q=") else "1") > 0
    return False


def scrape_budget(header: str | None) -> float | None:
    """The collectors' budget for a scrape whose client waits `header` seconds (Prometheus sends its
    scrape_timeout): that, less a margin to render and send; None when absent or unreadable."""
    try:
        timeout = float(header) if header else math.nan
    except ValueError:
        return None
    if not math.isfinite(timeout) or timeout <= 0:
        return None
    return max(MIN_BUDGET_SECONDS, timeout - min(SEND_MARGIN_SECONDS, timeout / 4))
