"""The time formats of the proxies in front of the engines, each as its own controller reads it (pure).

- Gateway API (GEP-2257): `1h30m`, `500ms`, `10s`; units h, m, s, ms; a unit is required.
- nginx (the F5 NGINX Ingress Controller's `nginx.org/*` annotations, http://nginx.org/en/docs/syntax.html):
  `60s`, `1m`, `1h 30m`; units ms, s, m, h, d, w, M (30 days), y (365 days); no unit: seconds.
- HAProxy (the OpenShift router): `30s`, `5m`, `2h`, `500ms`; no unit: milliseconds.
- ingress-nginx annotations are whole seconds (`strconv.Atoi`): read where they are, not here.
"""

from __future__ import annotations

import re
from typing import Any

_GATEWAY_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_GATEWAY_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_NGINX_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|M|y)?")
_NGINX_UNIT = {"ms": 0.001, "s": 1.0, "": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0,
               "M": 2592000.0, "y": 31536000.0}  # fmt: skip
_HAPROXY_TIME = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h|d)?")
_HAPROXY_UNIT = {"us": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "": 0.001}
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s|d)")
_GO_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def gateway_duration(text: str) -> float:
    """A Gateway API duration ("1h30m", "500ms", "10s") in seconds; ValueError when malformed."""
    parts = _GATEWAY_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * _GATEWAY_UNIT[u] for n, u in parts)


def nginx_time(text: str) -> float:
    """An nginx time ("60s", "10m", "1h 30m", "600": seconds) in seconds; ValueError when malformed."""
    words = text.split()
    found = [_NGINX_PART.fullmatch(w) for w in words]
    if not words or not all(found):
        raise ValueError(f"not an nginx time: {text!r}")
    return sum(float(m.group(1)) * _NGINX_UNIT[m.group(2) or ""] for m in found if m)


def haproxy_time(text: str) -> float:
    """HAProxy's time format ("30s", "5m", "2h", "500ms"; no unit: milliseconds) in seconds; ValueError if bad."""
    found = _HAPROXY_TIME.fullmatch(text.strip())
    if not found:
        raise ValueError(f"not an HAProxy time: {text!r}")
    return float(found.group(1)) * _HAPROXY_UNIT[found.group(2) or ""]


def duration_seconds(text: Any) -> float | None:
    """A Go-style duration ("30s", "5m", "1h30m", "500ms") or bare seconds ("90"); None when unreadable.

    For annotations whose owner documents no stricter format (AIBrix's scale-down delay)."""
    value = str(text).strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    parts = _GO_PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return None
    return sum(float(n) * _GO_UNIT[u] for n, u in parts)
