"""The dashboards inside the containers people deploy them in, as the classic Grafana model (pure).

- grafana-operator's `GrafanaDashboard` (`grafana.integreatly.org`): `spec.json`, `spec.gzipJson` (base64 of the
  gzipped JSON) or `spec.configMapRef` (a ConfigMap of the same input); a dashboard the operator downloads
  (`url`, `grafanaCom`, `jsonnet`…) is refused with what to check instead. `GrafanaManifest`: `spec.template`.
- Grafana's resources (`dashboard.grafana.app`, `kind: Dashboard`): v0/v1 keep the classic model in `spec`;
  v2 (the default of Grafana 13) is read by `exporter.check.grafana_v2`.
- Perses dashboards and `PersesDashboard` (`exporter.check.perses`).
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from exporter.check import grafana_v2, perses

MAX_INFLATED = 64 << 20  # a gzipped dashboard larger than this once inflated is refused, not read
_REMOTE = ("url", "grafanaCom", "jsonnet", "jsonnetLib", "envFrom")


class UnreadableError(Exception):
    """A container whose dashboard cannot be read from this input; the message says what to check instead."""


@dataclass
class Context:
    """What one input holds besides the document at hand: its ConfigMaps, by name."""

    config_maps: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    referenced: set[tuple[str, str]] = field(default_factory=set)  # (ConfigMap, key) a GrafanaDashboard reads

    @classmethod
    def of(cls, docs: Sequence[Any]) -> Context:
        context = cls()
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            name = str((doc.get("metadata") or {}).get("name") or "")
            if doc.get("kind") == "ConfigMap":
                context.config_maps[name] = doc
            ref = (doc.get("spec") or {}).get("configMapRef") if doc.get("kind") == "GrafanaDashboard" else None
            if isinstance(ref, dict):
                context.referenced.add((str(ref.get("name") or ""), str(ref.get("key") or "")))
        return context


def dashboard(doc: Mapping[str, Any], context: Context | None = None) -> tuple[Mapping[str, Any], str] | None:
    """(the classic dashboard, where in `doc` it was) of a container, None when `doc` is no container."""
    kind = doc.get("kind")
    name = str((doc.get("metadata") or {}).get("name") or "?")
    spec = _map(doc.get("spec"))
    if kind == "GrafanaDashboard":
        return _operator(name, spec, context or Context())
    if kind == "GrafanaManifest" and isinstance(spec.get("template"), dict):
        found = dashboard(spec["template"], context)
        return (found[0], f"GrafanaManifest {name}") if found else None
    if grafana_v2.is_v2(doc):
        return grafana_v2.classic(doc), ""
    if grafana_v2.is_resource(doc):  # v0alpha1, v1beta1: the classic model as the resource's spec
        return spec, ""
    found_spec = perses.dashboard_spec(doc)
    if found_spec is not None:
        return perses.classic(found_spec), "" if kind == "Dashboard" else f"PersesDashboard {name}"
    return None


def _operator(name: str, spec: Mapping[str, Any], context: Context) -> tuple[Mapping[str, Any], str]:
    where = f"GrafanaDashboard {name}"
    if isinstance(spec.get("json"), str) and spec["json"].strip():
        return _parsed(spec["json"], f"{where}: spec.json"), where
    if isinstance(spec.get("gzipJson"), str) and spec["gzipJson"].strip():
        return _parsed(_inflate(spec["gzipJson"], where), f"{where}: spec.gzipJson"), where
    ref = spec.get("configMapRef")
    if isinstance(ref, dict):
        cm, key = str(ref.get("name") or ""), str(ref.get("key") or "")
        data = (context.config_maps.get(cm) or {}).get("data") or {}
        if key not in data:
            raise UnreadableError(
                f"{where}: its dashboard is key {key!r} of ConfigMap {cm!r}, which is not in this file: "
                "check the file that holds the ConfigMap"
            )
        return _parsed(str(data[key]), f"{where}: ConfigMap {cm} key {key}"), f"{where} (ConfigMap {cm})"
    remote = [key for key in _REMOTE if spec.get(key)]
    if remote:
        raise UnreadableError(
            f"{where}: the operator fetches its dashboard (spec.{remote[0]}): download that dashboard and check it"
        )
    raise UnreadableError(f"{where}: no spec.json, spec.gzipJson or spec.configMapRef")


def _inflate(text: str, where: str) -> str:
    try:
        packed = base64.b64decode("".join(text.split()), validate=True)
        inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)  # gzip framing
        data = inflater.decompress(packed, MAX_INFLATED)
        if inflater.unconsumed_tail:
            raise UnreadableError(f"{where}: spec.gzipJson inflates past {MAX_INFLATED >> 20} MiB")
        return data.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError) as exc:
        raise UnreadableError(f"{where}: spec.gzipJson is not base64 of gzipped JSON: {exc}") from exc


def _parsed(text: str, where: str) -> Mapping[str, Any]:
    try:
        inner = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UnreadableError(f"{where}: not valid JSON: {exc}") from exc
    if not isinstance(inner, dict):
        raise UnreadableError(f"{where}: not a Grafana dashboard")
    found = dashboard(inner)  # a resource (v1, v2) wrapped by the operator
    return found[0] if found else inner


def _map(value: Any) -> dict[str, Any]:
    """`value` when it is a mapping, else an empty one (a list or a scalar where a map is due reads as none)."""
    return value if isinstance(value, dict) else {}
