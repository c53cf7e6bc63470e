"""Every gateway kind the exporter reads, and how a body or a target's `kind` picks one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from exporter.gateways import envoy_ai_gateway, epp, litellm
from exporter.gateways.reading import KindSplit, Reading


@dataclass(frozen=True, slots=True)
class GatewayKind:
    name: str  # the `kind` label and a target's `kind:`
    detect: Callable[[str], bool]  # True for a body of this kind
    # a body, gateways.tenant_labels and the request kind split -> the tenants' counts
    read: Callable[[str, Sequence[str], KindSplit], Reading]
    metrics_path: str  # where a base URL of a target of this kind is read


_ALL = (
    GatewayKind("litellm", litellm.detect, litellm.read, litellm.METRICS_PATH),
    GatewayKind("envoy_ai_gateway", envoy_ai_gateway.detect, envoy_ai_gateway.read, envoy_ai_gateway.METRICS_PATH),
    GatewayKind("epp", epp.detect, epp.read, epp.METRICS_PATH),
)
KINDS: dict[str, GatewayKind] = {k.name: k for k in _ALL}
NAMES = tuple(KINDS)
AUTO = "auto"
AUTO_METRICS_PATH = litellm.METRICS_PATH  # a base URL of an `auto` target (LiteLLM's app; give others their URL)


def detect(body: str) -> GatewayKind | None:
    """The first kind whose reader recognises the body, or None."""
    return next((k for k in _ALL if k.detect(body)), None)
