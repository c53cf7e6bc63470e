"""The PromQL of a gateway's counts per tenant, one builder for the recording rules, the dashboard and
`diagnose`.

Every node-role exporter with the same `gateways.targets` reads the same gateway, so a gateway series comes
once per exporter: it is taken once per gateway, the highest of the readings, after summing what one exporter
splits it into (the request kinds of its tokens, the priorities of its queue).
"""

from __future__ import annotations

REQUEST_KIND = "request_kind"


def once_per_gateway(inner: str, by: str, split: str = REQUEST_KIND) -> str:
    """`inner` (a rate or an average of a gateway series) by `by`, counted once per gateway."""
    return f"max by ({by}) (sum without ({split}) ({inner}))"
